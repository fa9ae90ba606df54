"""What differs between the GGUF architectures specexp makes Hugging Face folders of: the HF
architecture and config fields, the pre-tokenizer of each `tokenizer.ggml.pre`, and whether
llama.cpp's converter permuted the Q and K projections (which the folder must undo).

- **qwen2** (the packaged Qwen2.5-Coder pair): `Qwen2ForCausalLM`; llama.cpp writes qwen2's Q and K
  unpermuted (`Qwen2Model.modify_tensors` in convert_hf_to_gguf.py); its `qwen2` pre-type splits
  with Qwen2's regex after NFC (transformers' Qwen2Converter).
- **llama** (the packaged SmolLM2-135M): `LlamaForCausalLM`; llama.cpp permutes Q and K so that
  rotary pairs sit side by side (`LlamaModel.permute` in conversion/llama.py: rows of a head
  reshaped to (2, head_dim / 2) and swapped); `reverse_permute` below is its inverse. Its `smollm`
  pre-type (llama-vocab.cpp: every digit alone, then GPT-2's split) is, in the tokenizers library,
  `Digits(individual_digits)` followed by a regex-splitting `ByteLevel`, as SmolLM2's own
  tokenizer.json has it.

docs/models.md section 4 says which files this converts and how a folder was checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
"""Qwen2's pre-tokenizer split (transformers' Qwen2Converter; llama.cpp's `qwen2` pre-type)."""

BYTE_LEVEL = dict(type="ByteLevel", add_prefix_space=False, trim_offsets=False, use_regex=False)
"""Byte-level mapping with no split of its own (the split comes before it)."""


@dataclass(frozen=True)
class GgufArch:
    """One GGUF architecture specexp converts."""

    gguf: str
    hf_architecture: str
    model_type: str
    pre_tokenizers: dict[str, dict[str, Any]]
    """`tokenizer.ggml.pre` -> the tokenizers library's pre_tokenizer (the only ones accepted)."""
    normalizer: dict[str, Any] | None
    permuted_qk: bool
    config: Callable[[Callable[[str], Any], dict[str, Any]], dict[str, Any]]
    """(the GGUF's field reader, its HF-named shape) -> the config fields of this architecture."""


def reverse_permute(values: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's Q/K row order undone: each head's rows (pairs interleaved) back to the
    Hugging Face order (first halves, then second halves)."""
    rows, cols = values.shape
    half = rows // heads // 2
    return values.reshape(heads, half, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def _rope(field: Callable[[str], Any], arch: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "rope_theta": float(field(f"{arch}.rope.freq_base") or 10000.0),
        "rope_scaling": None,
    }
    if field(f"{arch}.rope.scaling.type") == "yarn":
        out["rope_scaling"] = {
            "type": "yarn",
            "factor": float(field(f"{arch}.rope.scaling.factor")),
            "original_max_position_embeddings": field(
                f"{arch}.rope.scaling.original_context_length"
            ),
        }
    return out


def _eps(field: Callable[[str], Any], arch: str) -> float:
    return float(f"{field(f'{arch}.attention.layer_norm_rms_epsilon'):.6g}")


def _qwen2_config(field: Callable[[str], Any], shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "rms_norm_eps": _eps(field, "qwen2"),
        **_rope(field, "qwen2"),
        "use_sliding_window": False,
        "sliding_window": None,
        "max_window_layers": shape["num_hidden_layers"],
    }


def _llama_config(field: Callable[[str], Any], shape: dict[str, Any]) -> dict[str, Any]:
    return {
        "rms_norm_eps": _eps(field, "llama"),
        **_rope(field, "llama"),
        "head_dim": shape["head_dim"],
        "attention_bias": False,
        "mlp_bias": False,
        "pretraining_tp": 1,
    }


ARCHS = {
    "qwen2": GgufArch(
        gguf="qwen2",
        hf_architecture="Qwen2ForCausalLM",
        model_type="qwen2",
        pre_tokenizers={
            "qwen2": {
                "type": "Sequence",
                "pretokenizers": [
                    dict(
                        type="Split",
                        pattern={"Regex": QWEN2_SPLIT},
                        behavior="Isolated",
                        invert=False,
                    ),
                    BYTE_LEVEL,
                ],
            }
        },
        normalizer={"type": "NFC"},
        permuted_qk=False,
        config=_qwen2_config,
    ),
    "llama": GgufArch(
        gguf="llama",
        hf_architecture="LlamaForCausalLM",
        model_type="llama",
        pre_tokenizers={
            "smollm": {
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "Digits", "individual_digits": True},
                    {**BYTE_LEVEL, "trim_offsets": True, "use_regex": True},
                ],
            }
        },
        normalizer=None,
        permuted_qk=True,
        config=_llama_config,
    ),
}
"""The architectures specexp converts, by `general.architecture`."""

GLOBAL_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
BLOCK_NAMES = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
"""llama.cpp's qwen2 and llama tensor names -> Qwen2ForCausalLM's and LlamaForCausalLM's (gguf-py's
TensorNameMap, reversed)."""
PERMUTED = {"attn_q.weight": "num_attention_heads", "attn_k.weight": "num_key_value_heads"}
"""The tensors llama.cpp permutes for llama, and the head count each is permuted by."""


def hf_name(name: str) -> str:
    """The Hugging Face name of GGUF tensor `name` (KeyError: not a qwen2 or llama tensor)."""
    if name in GLOBAL_NAMES:
        return GLOBAL_NAMES[name]
    blk, index, rest = name.split(".", 2)
    if blk != "blk" or not index.isdigit():
        raise KeyError(name)
    return f"model.layers.{int(index)}.{BLOCK_NAMES[rest]}"
