"""Tiny random-weight Llama models in Hugging Face format that vLLM loads on the CPU.

A model directory holds ``config.json``, ``model.safetensors`` (BF16), ``generation_config.json``,
and a byte-level BPE tokenizer (``tokenizer.json``, ``tokenizer_config.json`` with a ChatML chat
template). Everything is written with numpy and the standard library: no torch, transformers or
tokenizers, so specexp writes it in its own process before it starts the server, and the same
arguments give byte-identical files on every machine (numpy's seeded generators are portable;
a tokenizer trained on local text would not be).

The vocabulary is the 256 byte tokens (GPT-2's byte-to-unicode alphabet, no merges) and three
ChatML specials. ``lm_head`` rows of every token but printable ASCII and newline are zero, so
greedy decoding emits readable text and never a special token. Head sizes must be ones vLLM's CPU
attention backend supports (32, 64, 80, ...: docs/engines.md section 7.2; a draft with
``head_dim`` 16 loads, then kills the engine on its first request). Draft models are the target's
weights plus ``noise`` times each tensor's std of seeded gaussian noise: 0 is an exact copy.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from specexp.models.in_place import new_folder
from specexp.models.tensors import Array, bf16_bytes, seeded_weights

FORMAT_VERSION = 1
"""Bump on any change to the written bytes; it is part of :func:`ensure_model`'s cache key."""

SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
VOCAB_SIZE = 256 + len(SPECIALS)
BOS_ID, EOS_ID = 256, 258  # <|endoftext|>, <|im_end|>
EMITTED = sorted({*range(0x20, 0x7F), 0x0A})
"""Token ids (= byte values) greedy decoding may choose: printable ASCII and newline."""
CPU_HEAD_SIZES = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
"""Head sizes vLLM's CPU attention backend runs (docs/engines.md section 7.2)."""

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclasses.dataclass(frozen=True)
class HfShape:
    """Hyper-parameters of a tiny Llama (the names of its config.json in comments)."""

    layers: int = 2  # num_hidden_layers
    hidden: int = 128  # hidden_size
    ff: int = 256  # intermediate_size
    heads: int = 4  # num_attention_heads
    kv_heads: int = 2  # num_key_value_heads
    head_dim: int = 32  # head_dim
    context: int = 2048  # max_position_embeddings

    def __post_init__(self) -> None:
        if min(dataclasses.astuple(self)) < 1:
            raise ValueError(f"all shape fields must be positive: {self}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even (RoPE): {self}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads: {self}")


def byte_alphabet() -> list[str]:
    """GPT-2's reversible byte -> printable character map, in byte order (the ByteLevel alphabet)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def _tensor_specs(shape: HfShape) -> Iterator[tuple[str, tuple[int, ...]]]:
    h, f = shape.hidden, shape.ff
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    yield "model.embed_tokens.weight", (VOCAB_SIZE, h)
    for i in range(shape.layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (h,)
        yield p + "self_attn.q_proj.weight", (q, h)
        yield p + "self_attn.k_proj.weight", (kv, h)
        yield p + "self_attn.v_proj.weight", (kv, h)
        yield p + "self_attn.o_proj.weight", (h, q)
        yield p + "post_attention_layernorm.weight", (h,)
        yield p + "mlp.gate_proj.weight", (f, h)
        yield p + "mlp.up_proj.weight", (f, h)
        yield p + "mlp.down_proj.weight", (h, f)
    yield "model.norm.weight", (h,)
    yield "lm_head.weight", (VOCAB_SIZE, h)


def make_tensors(seed: int, shape: HfShape, noise: float = 0.0) -> dict[str, Array]:
    """The model's tensors: seeded weights (std 1/sqrt(fan-in), norms 1), plus `noise` x std noise."""
    tensors = seeded_weights(seed, _tensor_specs(shape), noise)
    silent = np.setdiff1d(np.arange(VOCAB_SIZE), EMITTED)
    tensors["lm_head.weight"][silent] = 0.0
    return tensors


def safetensors_bytes(tensors: dict[str, Array]) -> bytes:
    """The safetensors file of `tensors` in BF16: u64 header length, JSON header, data."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = bf16_bytes(array)
        header[name] = {
            "dtype": "BF16",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def config_json(shape: HfShape) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": VOCAB_SIZE,
        "hidden_size": shape.hidden,
        "intermediate_size": shape.ff,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "max_position_embeddings": shape.context,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "initializer_range": 0.02,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": BOS_ID,
        "use_cache": True,
    }


def tokenizer_json() -> dict[str, object]:
    """A byte-level BPE with no merges: one token per byte, ids = byte values, then the specials."""
    added = [
        {
            "id": 256 + i,
            "content": t,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i, t in enumerate(SPECIALS)
    ]
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": False,
        "use_regex": True,
    }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": byte_level,
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {c: i for i, c in enumerate(byte_alphabet())}
            | {t: 256 + i for i, t in enumerate(SPECIALS)},
            "merges": [],
        },
    }


def tokenizer_config_json(shape: HfShape) -> dict[str, object]:
    decoder = {
        str(256 + i): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for i, t in enumerate(SPECIALS)
    }
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": decoder,
        "bos_token": SPECIALS[0],
        "eos_token": SPECIALS[2],
        "pad_token": SPECIALS[0],
        "unk_token": None,
        "model_max_length": shape.context,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }


def files(seed: int, shape: HfShape, noise: float) -> dict[str, bytes]:
    """Every file of the model directory, by name."""

    def dump(obj):
        return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()

    return {
        "config.json": dump(config_json(shape)),
        "generation_config.json": dump(
            {"bos_token_id": BOS_ID, "eos_token_id": EOS_ID, "pad_token_id": BOS_ID}
        ),
        "tokenizer.json": dump(tokenizer_json()),
        "tokenizer_config.json": dump(tokenizer_config_json(shape)),
        "special_tokens_map.json": dump(
            {"bos_token": SPECIALS[0], "eos_token": SPECIALS[2], "pad_token": SPECIALS[0]}
        ),
        "model.safetensors": safetensors_bytes(make_tensors(seed, shape, noise)),
    }


def write_model(
    path: Path, *, seed: int = 0, shape: HfShape = HfShape(), noise: float = 0.0
) -> Path:
    """Write the model directory `path` atomically (a sibling temp dir, then rename); return it."""
    return write_folder(
        Path(path), files(seed, shape, noise)
    )  # validated before touching the file system


def write_folder(path: Path, content: dict[str, bytes]) -> Path:
    """Write `content` (file name -> bytes) as the folder `path`, atomically: a sibling temp dir, then rename."""
    with new_folder(path) as tmp:
        for name, data in content.items():
            (tmp / name).write_bytes(data)
    return path


def ensure_model(
    cache_dir: Path, *, seed: int = 0, shape: HfShape = HfShape(), noise: float = 0.0
) -> Path:
    """A cached model directory for these parameters, written only when it is missing."""
    key = [FORMAT_VERSION, seed, dataclasses.asdict(shape), noise]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"tiny-hf-{digest}"
    if not (path / "model.safetensors").is_file():
        write_model(path, seed=seed, shape=shape, noise=noise)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specexp.models.tiny_hf OUT_DIR [--seed N] [--noise X] [--heads H] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m specexp.models.tiny_hf",
        description="Write a tiny Llama model directory in Hugging Face format.",
    )
    parser.add_argument("out", type=Path, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument(
        "--noise", type=float, default=0.0, help="draft noise (default 0: an exact copy)"
    )
    for field in dataclasses.fields(HfShape):
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            type=int,
            default=field.default,
            help=f"default {field.default}",
        )
    args = parser.parse_args(argv)
    try:
        shape = HfShape(**{f.name: getattr(args, f.name) for f in dataclasses.fields(HfShape)})
        print(write_model(args.out, seed=args.seed, shape=shape, noise=args.noise))
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
