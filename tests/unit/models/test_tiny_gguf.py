"""Tests for specexp.models.tiny_gguf: determinism, metadata, vocab, tensor shapes, draft noise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest

from specexp.models.tiny_gguf import (
    TinyModelShape,
    build_vocab,
    ensure_model,
    main,
    write_tiny_model,
)

SMALL = TinyModelShape(layers=2, embd=64, ff=96, heads=4, kv_heads=2, context=512)


def _tensors(path: Path) -> dict[str, np.ndarray]:
    return {t.name: np.array(t.data) for t in gguf.GGUFReader(path).tensors}


def _field(reader: gguf.GGUFReader, key: str) -> object:
    field = reader.get_field(key)
    assert field is not None, f"missing metadata key {key}"
    return field.contents()


def test_same_arguments_give_byte_identical_files(tmp_path: Path) -> None:
    a = write_tiny_model(tmp_path / "a.gguf", seed=3, noise=0.05)
    b = write_tiny_model(tmp_path / "b.gguf", seed=3, noise=0.05)
    assert a.read_bytes() == b.read_bytes()


def test_rewrite_replaces_file_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    write_tiny_model(path, seed=1, shape=SMALL)
    first = path.read_bytes()
    write_tiny_model(path, seed=1, shape=SMALL)
    assert path.read_bytes() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.gguf"]


@pytest.mark.parametrize(
    "kwargs",
    [{"seed": 1}, {"noise": 0.05}, {"noise": 0.1}, {"shape": SMALL}, {"name": "other"}],
)
def test_different_arguments_give_different_files(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    base = write_tiny_model(tmp_path / "base.gguf").read_bytes()
    other = write_tiny_model(tmp_path / "other.gguf", **kwargs).read_bytes()
    assert other != base


def test_metadata_keys_and_vocab(tmp_path: Path) -> None:
    reader = gguf.GGUFReader(write_tiny_model(tmp_path / "m.gguf", name="probe"))
    expected = {
        "general.architecture": "llama",
        "general.name": "probe",
        "llama.context_length": 2048,
        "llama.embedding_length": 128,
        "llama.block_count": 4,
        "llama.feed_forward_length": 256,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "llama.rope.dimension_count": 32,
        "llama.vocab_size": 354,
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
    }
    assert {key: _field(reader, key) for key in expected} == expected
    assert _field(reader, "llama.attention.layer_norm_rms_epsilon") == pytest.approx(1e-5)
    assert "{% for message in messages %}" in str(_field(reader, "tokenizer.chat_template"))

    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert isinstance(tokens, list) and len(tokens) == 354
    assert tokens[:3] == ["<unk>", "<s>", "</s>"]
    assert tokens[3] == "<0x00>" and tokens[13] == "<0x0A>" and tokens[258] == "<0xFF>"
    assert tokens[259] == "\u2581" and tokens[260] == "!" and tokens[-1] == "~"
    assert tokens == [text for text, _, _ in build_vocab()]
    types = _field(reader, "tokenizer.ggml.token_type")
    assert types == [2, 3, 3] + [6] * 256 + [1] * 95
    assert len(_field(reader, "tokenizer.ggml.scores")) == 354  # type: ignore[arg-type]


def test_vocab_text_is_unique() -> None:
    texts = [text for text, _, _ in build_vocab()]
    assert len(set(texts)) == len(texts) == 354


def test_tensor_shapes_and_types(tmp_path: Path) -> None:
    reader = gguf.GGUFReader(write_tiny_model(tmp_path / "m.gguf", shape=SMALL))
    shapes = {t.name: tuple(int(n) for n in t.shape) for t in reader.tensors}  # ggml ne order
    assert {t.tensor_type for t in reader.tensors} == {gguf.GGMLQuantizationType.F32}
    assert len(shapes) == 3 + 9 * SMALL.layers
    assert shapes["token_embd.weight"] == (64, 354)
    assert shapes["output.weight"] == (64, 354)
    assert shapes["output_norm.weight"] == (64,)
    assert shapes["blk.1.attn_q.weight"] == (64, 64)
    assert shapes["blk.1.attn_k.weight"] == (64, 32)
    assert shapes["blk.1.attn_v.weight"] == (64, 32)
    assert shapes["blk.1.attn_output.weight"] == (64, 64)
    assert shapes["blk.0.ffn_gate.weight"] == (64, 96)
    assert shapes["blk.0.ffn_up.weight"] == (64, 96)
    assert shapes["blk.0.ffn_down.weight"] == (96, 64)
    assert shapes["blk.0.attn_norm.weight"] == shapes["blk.0.ffn_norm.weight"] == (64,)


def test_output_rows_of_special_and_byte_tokens_are_zero(tmp_path: Path) -> None:
    out = _tensors(write_tiny_model(tmp_path / "m.gguf", noise=0.5))["output.weight"]
    assert out.shape == (354, 128)
    assert not out[:259].any()
    assert np.all(np.abs(out[259:]).sum(axis=1) > 0)


def test_noise_zero_draft_has_target_tensors(tmp_path: Path) -> None:
    target = _tensors(write_tiny_model(tmp_path / "t.gguf", seed=5))
    draft = _tensors(write_tiny_model(tmp_path / "d.gguf", seed=5, noise=0.0, name="draft"))
    assert target.keys() == draft.keys()
    for name in target:
        np.testing.assert_array_equal(draft[name], target[name], err_msg=name)


def test_noise_perturbs_weight_matrices_relative_to_their_std(tmp_path: Path) -> None:
    target = _tensors(write_tiny_model(tmp_path / "t.gguf", seed=5))
    draft = _tensors(write_tiny_model(tmp_path / "d.gguf", seed=5, noise=0.05))
    for name, w in target.items():
        if w.ndim == 1:  # norm weights are constant ones: std 0, left alone
            np.testing.assert_array_equal(draft[name], w)
            continue
        rows = slice(259, None) if name == "output.weight" else slice(None)
        rel = float(np.std(draft[name][rows] - w[rows]) / np.std(w[rows]))
        assert 0.03 < rel < 0.07, (name, rel)


def test_different_seeds_give_different_weights(tmp_path: Path) -> None:
    a = _tensors(write_tiny_model(tmp_path / "a.gguf", seed=0))
    b = _tensors(write_tiny_model(tmp_path / "b.gguf", seed=1))
    assert not np.array_equal(a["token_embd.weight"], b["token_embd.weight"])


def test_ensure_model_caches_by_parameters(tmp_path: Path) -> None:
    first = ensure_model(tmp_path / "cache", seed=2, shape=SMALL, noise=0.0, name="t")
    stamp = first.stat().st_mtime_ns
    assert ensure_model(tmp_path / "cache", seed=2, shape=SMALL, noise=0.0, name="t") == first
    assert first.stat().st_mtime_ns == stamp  # not rewritten
    assert (
        first.read_bytes()
        == write_tiny_model(tmp_path / "fresh.gguf", seed=2, shape=SMALL, name="t").read_bytes()
    )
    other = ensure_model(tmp_path / "cache", seed=2, shape=SMALL, noise=0.05, name="t")
    assert other != first and other.exists()


@pytest.mark.parametrize(
    "kwargs",
    [{"heads": 3}, {"heads": 4, "kv_heads": 3}, {"embd": 36, "heads": 4}, {"layers": 0}],
)
def test_invalid_shapes_are_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        TinyModelShape(**kwargs)


def test_negative_noise_is_rejected_without_writing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="noise"):
        write_tiny_model(tmp_path / "m.gguf", noise=-0.1)
    assert list(tmp_path.iterdir()) == []


def test_cli_writes_the_same_file_as_the_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cli.gguf"
    argv = [
        str(out),
        "--seed",
        "7",
        "--noise",
        "0.05",
        "--layers",
        "1",
        "--embd",
        "64",
        "--ff",
        "128",
        "--heads",
        "2",
        "--kv-heads",
        "1",
        "--name",
        "small",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip() == str(out)
    shape = TinyModelShape(layers=1, embd=64, ff=128, heads=2, kv_heads=1)
    api = write_tiny_model(tmp_path / "api.gguf", seed=7, noise=0.05, shape=shape, name="small")
    assert out.read_bytes() == api.read_bytes()


def test_cli_reports_invalid_shape(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "x.gguf"), "--heads", "3"])
    assert exc.value.code == 2
    assert not (tmp_path / "x.gguf").exists()
