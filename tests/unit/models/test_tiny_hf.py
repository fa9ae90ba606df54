"""specexp.models.tiny_hf: the Hugging Face model directories specexp writes for real vLLM runs.
(That vLLM loads and serves them is tests/integration/test_vllm.py.)"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from specexp.models.tiny_hf import (
    BOS_ID,
    CPU_HEAD_SIZES,
    EMITTED,
    EOS_ID,
    SPECIALS,
    VOCAB_SIZE,
    HfShape,
    bf16_bytes,
    byte_alphabet,
    ensure_model,
    main,
    write_model,
)
from specexp.spec.experiment import ModelSpec
from specexp.spec.paths import options


def read_safetensors(path: Path) -> dict[str, tuple[list[int], bytes]]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    header.pop("__metadata__")
    body = data[8 + size :]
    return {
        name: (t["shape"], body[t["data_offsets"][0] : t["data_offsets"][1]])
        for name, t in header.items()
    }


def test_the_same_arguments_give_byte_identical_files(tmp_path: Path) -> None:
    a, b = (
        write_model(tmp_path / "a", seed=3, noise=0.04),
        write_model(tmp_path / "b", seed=3, noise=0.04),
    )
    names = sorted(p.name for p in a.iterdir())
    assert names == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in names)


def test_the_copy_draft_is_the_target_and_the_noisy_one_is_not(tmp_path: Path) -> None:
    target = read_safetensors(write_model(tmp_path / "t") / "model.safetensors")
    copy = read_safetensors(write_model(tmp_path / "c", noise=0.0) / "model.safetensors")
    noisy = read_safetensors(write_model(tmp_path / "n", noise=0.04) / "model.safetensors")
    assert copy == target
    changed = [name for name in target if noisy[name][1] != target[name][1]]
    assert "lm_head.weight" in changed and "model.layers.0.self_attn.q_proj.weight" in changed
    assert all(
        "norm" in name for name in set(target) - set(changed)
    )  # norms are ones: noise leaves them


def test_the_config_has_vllm_cpu_head_sizes_and_the_weights_match_it(tmp_path: Path) -> None:
    shape = HfShape()
    path = write_model(tmp_path / "m", shape=shape)
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["head_dim"] in CPU_HEAD_SIZES
    assert config["vocab_size"] == VOCAB_SIZE == 259 and config["torch_dtype"] == "bfloat16"
    tensors = read_safetensors(path / "model.safetensors")
    assert tensors["model.layers.1.self_attn.k_proj.weight"][0] == [
        shape.kv_heads * shape.head_dim,
        shape.hidden,
    ]
    assert tensors["lm_head.weight"][0] == [VOCAB_SIZE, shape.hidden]
    assert len(tensors) == 3 + 9 * shape.layers


def test_greedy_decoding_can_only_emit_printable_text(tmp_path: Path) -> None:
    tensors = read_safetensors(write_model(tmp_path / "m") / "model.safetensors")
    shape, blob = tensors["lm_head.weight"]
    rows = np.frombuffer(blob, dtype="<u2").reshape(shape)
    silent = [i for i in range(VOCAB_SIZE) if i not in EMITTED]
    assert not rows[silent].any() and rows[EMITTED].any(axis=1).all()
    assert BOS_ID in silent and EOS_ID in silent


def test_the_tokenizer_is_one_token_per_byte_with_chatml_specials(tmp_path: Path) -> None:
    path = write_model(tmp_path / "m")
    tokenizer = json.loads((path / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    alphabet = byte_alphabet()
    assert (
        len(set(alphabet)) == 256
        and vocab[alphabet[ord("a")]] == ord("a")
        and tokenizer["model"]["merges"] == []
    )
    assert [vocab[t] for t in SPECIALS] == [256, 257, 258]
    config = json.loads((path / "tokenizer_config.json").read_text())
    assert "<|im_start|>" in config["chat_template"] and config["eos_token"] == "<|im_end|>"


def test_bf16_rounds_to_nearest_even() -> None:
    values = np.array([1.0, -2.5, 1.0 + 2**-8, 1.0 + 3 * 2**-8], dtype=np.float32)
    assert np.frombuffer(bf16_bytes(values), dtype="<u2").tolist() == [
        0x3F80,
        0xC020,
        0x3F80,
        0x3F82,
    ]


def test_models_are_cached_by_their_parameters(tmp_path: Path) -> None:
    first = ensure_model(tmp_path, seed=0)
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert (
        ensure_model(tmp_path, seed=0) == first
        and (first / "model.safetensors").stat().st_mtime_ns == stamp
    )
    assert ensure_model(tmp_path, seed=0, noise=0.04) != first


@pytest.mark.parametrize("name", ["tiny-hf", "tiny-hf-draft-copy", "tiny-hf-draft-noisy"])
def test_the_model_configs_are_the_writers_shape(name: str) -> None:
    from omegaconf import OmegaConf

    assert name in options("model")
    conf = Path(__file__).resolve().parents[3] / "conf" / "model" / f"{name}.yaml"
    model = ModelSpec.model_validate(OmegaConf.to_container(OmegaConf.load(conf)))
    shape = HfShape()
    assert (
        model.num_hidden_layers,
        model.hidden_size,
        model.intermediate_size,
        model.num_attention_heads,
        model.num_key_value_heads,
        model.head_dim,
        model.max_position_embeddings,
    ) == (
        shape.layers,
        shape.hidden,
        shape.ff,
        shape.heads,
        shape.kv_heads,
        shape.head_dim,
        shape.context,
    )
    assert model.vocab_size == VOCAB_SIZE and model.generated_hf is not None
    assert (model.generated_hf.noise > 0) == (name == "tiny-hf-draft-noisy")


def test_the_command_line_writes_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "m"), "--heads", "8", "--head-dim", "16"]) == 0
    assert json.loads((tmp_path / "m" / "config.json").read_text())["head_dim"] == 16
    with pytest.raises(SystemExit):
        main([str(tmp_path / "bad"), "--kv-heads", "3"])
