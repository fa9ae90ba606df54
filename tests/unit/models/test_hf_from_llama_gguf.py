"""specexp.models.hf_from_gguf on a llama GGUF (the packaged SmolLM2-135M's architecture): llama.cpp
permutes each head's Q and K rows into rotary pairs, and the folder must hold them in Hugging Face's
order again; the config is Llama's; the `smollm` pre-tokenizer splits every digit alone. (The real
SmolLM2 folder against transformers' own GGUF loader: docs/models.md section 4.)"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import pytest

from specexp.models import hf_from_gguf as h
from specexp.models.tiny_hf import byte_alphabet
from tests.unit.models.test_hf_from_gguf import bf16_to_f32, gpt2_vocab_writer, read_safetensors

HIDDEN, FF, HEADS, KV_HEADS, LAYERS = 128, 256, 4, 2, 1
HEAD_DIM = HIDDEN // HEADS
MERGES = ["Ġ t", "h e", "Ġt he", "2 0"]
"""`2 0` is a merge, but the `smollm` pre-tokenizer splits every digit alone first."""
TOKENS = [*byte_alphabet(), *(m.replace(" ", "") for m in MERGES), "<|im_start|>", "<|im_end|>"]


def llama_cpp_permute(weights: np.ndarray, heads: int) -> np.ndarray:
    """What llama.cpp's converter does to llama's Q and K (conversion/llama.py, LlamaModel.permute)."""
    return (
        weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, np.ndarray], Path]:
    """(the Hugging Face Q and K the GGUF was made from, the folder made from the GGUF)."""
    tmp = tmp_path_factory.mktemp("hf-from-llama")
    rng = np.random.default_rng(1)
    hf = {
        "q": rng.standard_normal((HEADS * HEAD_DIM, HIDDEN)).astype(np.float32),
        "k": rng.standard_normal((KV_HEADS * HEAD_DIM, HIDDEN)).astype(np.float32),
    }
    writer = gpt2_vocab_writer(
        tmp / "tiny-smollm.gguf",
        "llama",
        "smollm",
        (HIDDEN, FF, HEADS, KV_HEADS, LAYERS),
        gguf.LlamaFileType.MOSTLY_Q4_1,
        rope_theta=100_000.0,
        rms_eps=1e-5,
    )
    writer.add_token_list(TOKENS)
    types = [gguf.TokenType.NORMAL] * (len(TOKENS) - 2) + [gguf.TokenType.CONTROL] * 2
    writer.add_token_types([int(t) for t in types])
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(len(TOKENS) - 2)
    writer.add_eos_token_id(len(TOKENS) - 1)
    q4_1 = gguf.GGMLQuantizationType.Q4_1
    tensors = {
        "token_embd.weight": gguf.quantize(rng.standard_normal((len(TOKENS), HIDDEN)), q4_1),
        "output_norm.weight": np.ones(HIDDEN, np.float32),
        "blk.0.attn_norm.weight": np.ones(HIDDEN, np.float32),
        "blk.0.attn_q.weight": llama_cpp_permute(hf["q"], HEADS),
        "blk.0.attn_k.weight": llama_cpp_permute(hf["k"], KV_HEADS),
        "blk.0.attn_v.weight": rng.standard_normal((KV_HEADS * HEAD_DIM, HIDDEN)),
        "blk.0.attn_output.weight": rng.standard_normal((HIDDEN, HIDDEN)),
        "blk.0.ffn_norm.weight": np.ones(HIDDEN, np.float32),
        "blk.0.ffn_gate.weight": rng.standard_normal((FF, HIDDEN)),
        "blk.0.ffn_up.weight": rng.standard_normal((FF, HIDDEN)),
        "blk.0.ffn_down.weight": rng.standard_normal((HIDDEN, FF)),
    }
    for name, array in tensors.items():
        quantized = name == "token_embd.weight"
        writer.add_tensor(
            name,
            array if quantized else np.asarray(array, np.float32),
            raw_dtype=q4_1 if quantized else None,
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    source = tmp / "tiny-smollm.gguf"
    return hf, h.write_folder(source, tmp / "hf", h.file_sha256(source))


def test_q_and_k_are_back_in_hugging_face_order(
    llama: tuple[dict[str, np.ndarray], Path],
) -> None:
    hf, folder = llama
    written = read_safetensors(folder / "model.safetensors")
    for proj, heads in (("q", HEADS), ("k", KV_HEADS)):
        dtype, shape, blob = written[f"model.layers.0.self_attn.{proj}_proj.weight"]
        assert dtype == "BF16" and shape == [heads * HEAD_DIM, HIDDEN]
        got = bf16_to_f32(blob).reshape(shape)
        assert np.array_equal(got, bf16_to_f32(h.bf16_bytes(hf[proj])).reshape(shape)), proj
        assert not np.allclose(got, llama_cpp_permute(hf[proj], heads), rtol=2**-8)


def test_the_config_is_llamas_and_the_tokenizer_splits_digits(
    llama: tuple[dict[str, np.ndarray], Path],
) -> None:
    config = json.loads((llama[1] / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert (config["head_dim"], config["rope_theta"], config["rms_norm_eps"]) == (
        HEAD_DIM,
        100_000.0,
        1e-5,
    )
    assert config["tie_word_embeddings"] is True and config["attention_bias"] is False
    tokenizer = json.loads((llama[1] / "tokenizer.json").read_text())
    digits, byte_level = tokenizer["pre_tokenizer"]["pretokenizers"]
    assert digits == {"type": "Digits", "individual_digits": True}
    assert byte_level["type"] == "ByteLevel" and byte_level["use_regex"] is True
    assert tokenizer["normalizer"] is None
    stamp = json.loads((llama[1] / h.STAMP).read_text())
    assert stamp["file_type"] == "Q4_1"


def test_its_tokenizer_encodes_as_smollm_does(llama: tuple[dict[str, np.ndarray], Path]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(llama[1] / "tokenizer.json"))
    assert tok.encode(" the 2024").tokens == ["Ġthe", "Ġ", "2", "0", "2", "4"]
