"""A Hugging Face model folder made from a qwen2 or llama GGUF, for engines that read no GGUF.

vLLM 0.32.0 has no GGUF loader of its own and its GGUF plugin runs on CUDA or Triton only, so
vLLM on the CPU cannot serve the packaged Q4_K_M pair (docs/engines.md 7.2). This writes the same
weights as a folder it loads: every tensor dequantized with the `gguf` package (numpy, the values
llama.cpp computes with) and stored in BF16, under the Hugging Face names of the architecture
(Qwen2's and Llama's are the same); llama's Q and K projections, which llama.cpp's converter
permutes, are permuted back (specexp.models.gguf_arch says what differs by architecture).
`config.json` comes from the GGUF's metadata (specexp.models.gguf_config), and `tokenizer.json`
from its token list and merges, in the layout transformers' GGUF converter gives such a model
(the pre-tokenizer of its `tokenizer.ggml.pre`, byte-level BPE, control tokens as special added
tokens).

The folder is cached at `<cache>/models/hf/<sha256[:16] of the GGUF>/` and made once: a stamp
(`specexp-hf.json`, written last) records the GGUF's hash, what its tensors were and the size of
every file; a folder whose stamp does not match is made anew.

    python -m specexp.models.hf_from_gguf MODEL.gguf [OUT_DIR]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import gguf
import numpy as np

from specexp.models.gguf_arch import (
    ARCHS,
    BYTE_LEVEL,
    PERMUTED,
    QWEN2_SPLIT,
    GgufArch,
    hf_name,
    reverse_permute,
)
from specexp.models.gguf_config import hf_fields
from specexp.models.in_place import new_folder
from specexp.models.packaged import ensure_weights
from specexp.models.tensors import bf16_bytes
from specexp.spec.cache import cache_dir
from specexp.spec.experiment import PackagedWeights

FORMAT_VERSION = 1
"""Bump on any change to what is written; a stamp of another version is made anew."""
STAMP = "specexp-hf.json"
CHUNK_ELEMENTS = 1 << 22
"""Elements dequantized at a time: a 151,936 x 1,536 embedding never sits in memory as float32."""

__all__ = [
    "QWEN2_SPLIT",
    "GgufConversionError",
    "ensure_folder",
    "folder_for",
    "hf_name",
    "write_folder",
]


class GgufConversionError(Exception):
    """The GGUF cannot be made into a Hugging Face folder: one line naming the file and why."""


def hf_shape(tensor: gguf.ReaderTensor) -> tuple[int, ...]:
    """Row-major (Hugging Face) shape: GGUF lists dimensions fastest first."""
    return tuple(int(n) for n in reversed(tensor.shape.tolist()))


def dequantized(tensor: gguf.ReaderTensor) -> Iterator[np.ndarray]:
    """The tensor's values as float32, in chunks of whole rows (row-major)."""
    shape = hf_shape(tensor)
    cols = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    data = tensor.data.reshape(rows, -1)
    step = max(1, CHUNK_ELEMENTS // cols)
    for start in range(0, rows, step):
        block = np.asarray(data[start : start + step])
        values = gguf.dequantize(block, tensor.tensor_type)
        yield np.asarray(values, dtype=np.float32).reshape(-1, cols)


def _field(reader: gguf.GGUFReader, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def check_convertible(reader: gguf.GGUFReader, path: Path) -> GgufArch:
    """The GGUF's architecture; a GGUF this module does not convert is refused in one line."""
    name = _field(reader, "general.architecture")
    arch = ARCHS.get(name)
    if arch is None:
        raise GgufConversionError(
            f"{path}: architecture {name!r}; specexp makes Hugging Face folders of "
            f"{' and '.join(ARCHS)} GGUFs only"
        )
    tok = (_field(reader, "tokenizer.ggml.model"), _field(reader, "tokenizer.ggml.pre"))
    if (
        tok[0] != "gpt2"
        or tok[1] not in arch.pre_tokenizers
        or _field(reader, "tokenizer.ggml.merges") is None
    ):
        raise GgufConversionError(
            f"{path}: tokenizer {tok[0]!r} (pre {tok[1]!r}); specexp converts {name}'s byte-level "
            f"BPE with merges and pre {' or '.join(map(repr, arch.pre_tokenizers))} only"
        )
    for t in reader.tensors:
        try:
            hf_name(t.name)
        except (KeyError, ValueError):
            raise GgufConversionError(f"{path}: tensor {t.name!r} has no {name} name") from None
    return arch


def config_json(reader: gguf.GGUFReader, path: Path, arch: GgufArch) -> dict[str, Any]:
    """The architecture's config.json from the GGUF's metadata."""
    f = hf_fields(path)
    config: dict[str, Any] = {
        "architectures": [arch.hf_architecture],
        "model_type": arch.model_type,
        **{
            k: f[k]
            for k in (
                "vocab_size",
                "hidden_size",
                "intermediate_size",
                "num_hidden_layers",
                "num_attention_heads",
                "num_key_value_heads",
                "max_position_embeddings",
            )
        },
        "hidden_act": "silu",
        **arch.config(lambda key: _field(reader, key), f),
        "attention_dropout": 0.0,
        "tie_word_embeddings": f["tie_word_embeddings"],
        "torch_dtype": "bfloat16",
        "initializer_range": 0.02,
        "use_cache": True,
    }
    for key in ("bos", "eos", "pad"):
        value = _field(reader, f"tokenizer.ggml.{'padding' if key == 'pad' else key}_token_id")
        if value is not None:
            config[f"{key}_token_id"] = int(value)
    return config


def _special_ids(reader: gguf.GGUFReader) -> list[tuple[int, str, bool]]:
    """(id, text, special) of the control and user-defined tokens: the tokenizer's added tokens."""
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    control, user = int(gguf.TokenType.CONTROL), int(gguf.TokenType.USER_DEFINED)
    return [(i, tokens[i], t == control) for i, t in enumerate(types) if t in (control, user)]


ADDED = dict(single_word=False, lstrip=False, rstrip=False, normalized=False)
"""The flags of every added token (transformers' AddedToken as Qwen2's tokenizer.json has them)."""


def _added(token_id: int, text: str, special: bool) -> dict[str, Any]:
    return {"id": token_id, "content": text, **ADDED, "special": special}


def tokenizer_json(reader: gguf.GGUFReader, arch: GgufArch) -> dict[str, Any]:
    """The fast tokenizer from the GGUF's token list (ids as in the GGUF) and merges."""
    tokens = _field(reader, "tokenizer.ggml.tokens")
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [_added(*entry) for entry in _special_ids(reader)],
        "normalizer": arch.normalizer,
        "pre_tokenizer": arch.pre_tokenizers[_field(reader, "tokenizer.ggml.pre")],
        "post_processor": BYTE_LEVEL,
        "decoder": BYTE_LEVEL,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {text: i for i, text in enumerate(tokens)},
            "merges": list(_field(reader, "tokenizer.ggml.merges")),
        },
    }


def tokenizer_config_json(reader: gguf.GGUFReader, context: int) -> dict[str, Any]:
    tokens = _field(reader, "tokenizer.ggml.tokens")

    def text(key: str) -> str | None:
        value = _field(reader, f"tokenizer.ggml.{key}_token_id")
        return None if value is None else tokens[int(value)]

    decoder = {str(i): {"content": t, **ADDED, "special": s} for i, t, s in _special_ids(reader)}
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": decoder,
        "add_bos_token": bool(_field(reader, "tokenizer.ggml.add_bos_token")),
        "add_eos_token": bool(_field(reader, "tokenizer.ggml.add_eos_token")),
        "bos_token": text("bos"),
        "eos_token": text("eos"),
        "pad_token": text("padding"),
        "unk_token": None,
        "model_max_length": context,
        "clean_up_tokenization_spaces": False,
        "split_special_tokens": False,
        "errors": "replace",
        "chat_template": _field(reader, "tokenizer.chat_template"),
    }


def _values(t: gguf.ReaderTensor, arch: GgufArch, config: dict[str, Any]) -> Iterator[np.ndarray]:
    """The tensor's values in Hugging Face order: in chunks of rows, or whole where llama.cpp
    permuted its rows."""
    heads = PERMUTED.get(t.name.split(".", 2)[-1]) if arch.permuted_qk else None
    if heads is None:
        yield from dequantized(t)
        return
    yield reverse_permute(np.concatenate(list(dequantized(t))), int(config[heads]))


def _write_safetensors(
    reader: gguf.GGUFReader, sink: BinaryIO, arch: GgufArch, config: dict[str, Any]
) -> None:
    """model.safetensors in BF16, streamed tensor by tensor (the header first: sizes are known)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for t in reader.tensors:
        shape = hf_shape(t)
        size = 2 * int(np.prod(shape, dtype=np.int64))
        header[hf_name(t.name)] = {
            "dtype": "BF16",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    sink.write(struct.pack("<Q", len(text)) + text)
    for t in reader.tensors:
        for values in _values(t, arch, config):
            sink.write(bf16_bytes(values))


def _dump(obj: Any) -> bytes:
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()


def write_folder(gguf_path: Path, out: Path, sha256: str) -> Path:
    """Write the Hugging Face folder of the GGUF at `gguf_path` as `out`, atomically (a sibling
    temporary folder renamed), the stamp last."""
    gguf_path, out = Path(gguf_path), Path(out)
    try:
        reader = gguf.GGUFReader(str(gguf_path))
    except (OSError, ValueError) as exc:
        raise GgufConversionError(f"{gguf_path}: not a readable GGUF: {exc}") from None
    arch = check_convertible(reader, gguf_path)
    config = config_json(reader, gguf_path, arch)
    gen = {k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config}
    files = {
        "config.json": _dump(config),
        "generation_config.json": _dump(gen),
        "tokenizer.json": _dump(tokenizer_json(reader, arch)),
        "tokenizer_config.json": _dump(
            tokenizer_config_json(reader, config["max_position_embeddings"])
        ),
    }
    with new_folder(out) as tmp:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        with (tmp / "model.safetensors").open("wb") as sink:
            _write_safetensors(reader, sink, arch, config)
        types = collections.Counter(t.tensor_type.name for t in reader.tensors)
        stamp = {
            "format": FORMAT_VERSION,
            "gguf": gguf_path.name,
            "gguf_sha256": sha256,
            "file_type": _file_type(_field(reader, "general.file_type")),
            "tensor_types": dict(sorted(types.items())),
            "stored_as": "BF16",
            "files": {p.name: p.stat().st_size for p in sorted(tmp.iterdir())},
        }
        (tmp / STAMP).write_bytes(_dump(stamp))
    return out


def _file_type(value: Any) -> str | None:
    try:
        return gguf.LlamaFileType(int(value)).name.removeprefix("MOSTLY_")
    except (TypeError, ValueError):
        return None


def stamp_of(folder: Path) -> dict[str, Any] | None:
    """The folder's stamp when it says the folder is complete as it now is, else None."""
    try:
        stamp = json.loads((Path(folder) / STAMP).read_text())
        sizes = stamp["files"]
        if stamp["format"] != FORMAT_VERSION or not isinstance(sizes, dict):
            return None
        if all((Path(folder) / n).stat().st_size == size for n, size in sizes.items()):
            return stamp
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as source:
        while block := source.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def ensure_folder(
    gguf_path: Path,
    sha256: str | None = None,
    *,
    root: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The cached folder of the GGUF at `gguf_path` (its SHA-256 given, else computed), made when
    missing or stale."""
    sha256 = sha256 or file_sha256(gguf_path)
    folder = (root or cache_dir()) / "models" / "hf" / sha256[:16]
    stamp = stamp_of(folder)
    if stamp is not None and stamp.get("gguf_sha256") == sha256:
        return folder
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    say(f"specexp: dequantizing {Path(gguf_path).name} to BF16 in {folder} (once)")
    return write_folder(gguf_path, folder, sha256)


def folder_for(weights: PackagedWeights, root: Path | None = None) -> Path:
    """The Hugging Face folder of packaged weights: fetched (specexp.models.packaged) and
    dequantized first when not cached. Raises WeightsError or GgufConversionError (one line)."""
    return ensure_folder(ensure_weights(weights, root=root), weights.sha256, root=root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specexp.models.hf_from_gguf",
        description="Dequantize a qwen2 or llama GGUF into a Hugging Face folder (BF16 safetensors).",
    )
    parser.add_argument("gguf", type=Path, help="the .gguf file")
    parser.add_argument("out", type=Path, nargs="?", help="output folder (default: the cache)")
    args = parser.parse_args(argv)
    try:
        if args.out is None:
            print(ensure_folder(args.gguf))
        else:
            print(write_folder(args.gguf, args.out, file_sha256(args.gguf)))
    except (GgufConversionError, OSError) as exc:
        print(f"specexp: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
