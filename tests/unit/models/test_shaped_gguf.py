"""specexp.models.shaped_gguf: real model shapes (Qwen3) with random weights, written tensor by tensor."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest

from specexp.models import shaped_gguf
from specexp.models.shaped_gguf import Qwen3Shape, build_full_vocab, load_model, write_shaped_model
from specexp.models.tiny_gguf import N_ZEROED_OUTPUT_ROWS

# Qwen3-0.6B's proportions, scaled down: q heads x head_dim (8 x 32 = 256) wider than hidden (128)
SMALL = Qwen3Shape(
    layers=2,
    embd=128,
    ff=384,
    heads=8,
    kv_heads=4,
    head_dim=32,
    vocab=20_000,
    context=4096,
    tied=False,
)


def _field(reader: gguf.GGUFReader, key: str) -> object:
    field = reader.get_field(key)
    assert field is not None, f"missing metadata key {key}"
    return field.contents()


@pytest.mark.parametrize(
    ("dtype", "ggml", "ftype"),
    [
        ("bf16", "BF16", gguf.LlamaFileType.MOSTLY_BF16),
        ("f16", "F16", gguf.LlamaFileType.MOSTLY_F16),
    ],
)
def test_a_qwen3_shape_in_bf16_or_f16_as_llama_cpp_reads_it(
    tmp_path: Path, dtype: str, ggml: str, ftype: int
) -> None:
    reader = gguf.GGUFReader(write_shaped_model(tmp_path / "m.gguf", SMALL, dtype=dtype))  # type: ignore[arg-type]
    assert _field(reader, "general.architecture") == "qwen3"
    assert _field(reader, "general.file_type") == int(ftype)
    assert (_field(reader, "qwen3.block_count"), _field(reader, "qwen3.embedding_length")) == (
        2,
        128,
    )
    assert (
        _field(reader, "qwen3.attention.head_count"),
        _field(reader, "qwen3.attention.head_count_kv"),
    ) == (8, 4)
    assert (
        _field(reader, "qwen3.attention.key_length")
        == _field(reader, "qwen3.rope.dimension_count")
        == 32
    )
    assert len(_field(reader, "tokenizer.ggml.tokens")) == 20_000  # type: ignore[arg-type]
    tensors = {t.name: t for t in reader.tensors}
    assert len(tensors) == 1 + 2 * 11 + 2
    # ggml order (columns first): q projects 128 -> 8 x 32, the per-head norms are head_dim wide
    assert list(tensors["blk.0.attn_q.weight"].shape) == [128, 256]
    assert list(tensors["blk.0.attn_k.weight"].shape) == [128, 128]
    assert list(tensors["blk.1.attn_q_norm.weight"].shape) == [32]
    assert list(tensors["output.weight"].shape) == [128, 20_000]
    assert tensors["blk.0.ffn_down.weight"].tensor_type.name == ggml
    assert tensors["blk.0.attn_norm.weight"].tensor_type.name == "F32"
    assert np.all(np.array(tensors["blk.0.attn_norm.weight"].data) == 1.0)


def test_weights_are_finite_random_values_of_a_sane_scale(tmp_path: Path) -> None:
    reader = gguf.GGUFReader(write_shaped_model(tmp_path / "m.gguf", SMALL, dtype="f16"))
    w = np.array(next(t for t in reader.tensors if t.name == "blk.0.ffn_up.weight").data).view(
        np.float16
    )
    values = w.astype(np.float32).ravel()
    assert np.all(np.isfinite(values))
    assert 0.01 < values.std() < 0.03 and abs(values.mean()) < 0.002  # std 1/64
    out = np.array(next(t for t in reader.tensors if t.name == "output.weight").data).view(
        np.float16
    )
    rows = out.reshape(20_000, 128)
    assert not rows[:N_ZEROED_OUTPUT_ROWS].any() and rows[N_ZEROED_OUTPUT_ROWS:].any()


def test_tied_embeddings_write_no_output_tensor_and_zero_the_control_rows(tmp_path: Path) -> None:
    tied = Qwen3Shape(**{**SMALL.__dict__, "tied": True})
    reader = gguf.GGUFReader(write_shaped_model(tmp_path / "m.gguf", tied))
    names = {t.name for t in reader.tensors}
    assert "output.weight" not in names
    embd = np.array(next(t for t in reader.tensors if t.name == "token_embd.weight").data).view(
        np.uint16
    )
    embd = embd.reshape(20_000, 128)
    assert not embd[:N_ZEROED_OUTPUT_ROWS].any()


def test_same_arguments_same_bytes_and_a_seed_changes_them(tmp_path: Path) -> None:
    a = write_shaped_model(tmp_path / "a.gguf", SMALL, seed=3).read_bytes()
    assert write_shaped_model(tmp_path / "b.gguf", SMALL, seed=3).read_bytes() == a
    assert write_shaped_model(tmp_path / "c.gguf", SMALL, seed=4).read_bytes() != a
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.gguf", "b.gguf", "c.gguf"]


def test_the_file_is_written_in_chunks_whatever_the_tensor_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = write_shaped_model(tmp_path / "a.gguf", SMALL).read_bytes()
    monkeypatch.setattr(
        shaped_gguf, "CHUNK_BYTES", 4096
    )  # every tensor spans many chunks (and pool wraps)
    monkeypatch.setattr(shaped_gguf, "POOL_BYTES", 1 << 16)
    chunked = write_shaped_model(tmp_path / "b.gguf", SMALL)
    reader = gguf.GGUFReader(chunked)
    assert len(chunked.read_bytes()) == len(whole)
    assert {t.name: list(t.shape) for t in reader.tensors} == {
        t.name: list(t.shape) for t in gguf.GGUFReader(tmp_path / "a.gguf").tensors
    }


def test_the_full_vocabulary_is_unique_and_reachable_by_bigram_merges() -> None:
    vocab = [text for text, _, _ in build_full_vocab(151_936)]
    assert len(vocab) == len(set(vocab)) == 151_936
    known = set(vocab)
    assert all(t[:2] in known for t in vocab[354:] if len(t) == 3)


def test_real_shapes_come_from_the_model_files() -> None:
    eight = Qwen3Shape.of(load_model("qwen3-8b"))
    assert (
        eight.layers,
        eight.embd,
        eight.ff,
        eight.heads,
        eight.kv_heads,
        eight.head_dim,
        eight.vocab,
    ) == (36, 4096, 12288, 32, 8, 128, 151936)
    assert 16.0e9 < eight.weight_bytes("bf16") < 16.5e9  # 8.19 B parameters at 2 bytes
    assert Qwen3Shape.of(load_model("qwen3-0.6b")).tied
    with pytest.raises(ValueError, match="only dense models"):
        Qwen3Shape.of(load_model("qwen3.8-27b"))
    with pytest.raises(ValueError, match="accepted: "):
        load_model("qwen4")


def test_a_hybrid_model_is_written_in_llama_cpps_qwen35_layout(tmp_path: Path) -> None:
    big = shaped_gguf.shape_of(load_model("qwen3.8-27b"))
    assert isinstance(big, shaped_gguf.HybridShape) and big.vocab == 151936
    assert (
        51e9 < big.weight_bytes("bf16") < 53e9
    )  # 25.9 B parameters at 2 bytes (the attention's gate too)
    path = write_shaped_model(
        tmp_path / "h.gguf", shaped_gguf.shape_of(load_model("tiny-hybrid")), dtype="bf16"
    )
    reader = gguf.GGUFReader(path)
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[arch.data[0]]).decode() == "qwen35"
    tensors = {t.name: t for t in reader.tensors}
    # llama.cpp's ssm_conv reads its weight in F32 whatever the file's type; the decay stays negative
    assert tensors["blk.0.ssm_conv1d.weight"].tensor_type == gguf.GGMLQuantizationType.F32
    assert np.all(np.isfinite(tensors["blk.0.ssm_conv1d.weight"].data))
    assert tensors["blk.0.attn_qkv.weight"].tensor_type == gguf.GGMLQuantizationType.BF16
    assert np.all(tensors["blk.0.ssm_a"].data == -1.0) and np.all(
        tensors["blk.0.ssm_dt.bias"].data == 0.0
    )
