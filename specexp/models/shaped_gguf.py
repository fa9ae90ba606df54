"""Random-weight GGUF models in the shape of a real checkpoint (Qwen3-8B, Qwen3-0.6B, the hybrid
Qwen3.8-27B), for GPU runs that need no download.

The file has the real model's tensors, shapes and data type (BF16 or F16; norms F32, as llama.cpp's
converter writes them) in llama.cpp's ``qwen3`` architecture (``qwen35`` for a hybrid model, in
tiny_hybrid_gguf's layout; its decay A is -1 and its dt bias 0, so the recurrence stays bounded), and a vocabulary of the model's full
size (151,936 for Qwen3), so the lm_head and the sampler cost what they cost on the real model. The
vocabulary is specexp's own SPM one (tiny_gguf's 354 tokens, then every 2-character and enough
3-character strings of ``▁`` and printable ASCII), so it needs no tokenizer download either; output
rows of the control and byte tokens are zeroed as in tiny_gguf, so greedy decoding emits text.

Weights are written tensor by tensor in chunks, so memory stays at a few tens of MiB whatever the
model's size. Their values are seeded normal draws (std 1/64) from a 64 MiB pool, which each tensor
reads from a seeded offset onwards (cyclically): the speed of every kernel is that of real weights
of that type; the text they produce means nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO, Literal

import gguf
import numpy as np

from specexp.models.in_place import new_file
from specexp.models.tiny_gguf import (
    N_ZEROED_OUTPUT_ROWS,
    add_spm_tokenizer,
    add_transformer_metadata,
    block_dims,
    build_vocab,
)
from specexp.models.tiny_hybrid_gguf import ARCH as HYBRID_ARCH
from specexp.models.tiny_hybrid_gguf import TinyHybridShape, one_d_values, tensor_specs
from specexp.models.tiny_hybrid_gguf import add_metadata as add_hybrid_metadata
from specexp.spec.experiment import ModelSpec

Dtype = Literal["bf16", "f16"]
POOL_BYTES = 64 << 20
"""Size of the random pool every tensor's values are read from."""
CHUNK_BYTES = 16 << 20
_GGML = {"bf16": gguf.GGMLQuantizationType.BF16, "f16": gguf.GGMLQuantizationType.F16}
_FILE_TYPE = {"bf16": gguf.LlamaFileType.MOSTLY_BF16, "f16": gguf.LlamaFileType.MOSTLY_F16}
F32_MATRICES = ("ssm_conv1d.weight",)
"""Matrices llama.cpp reads in F32 whatever the file's type (its CPU ssm_conv asserts it; the converter
keeps them F32)."""
_ALPHABET = ["\u2581"] + [chr(c) for c in range(ord("!"), ord("~") + 1)]


@dataclasses.dataclass(frozen=True)
class Qwen3Shape:
    """Hyper-parameters of a dense Qwen3 model (config.json names in the comments)."""

    layers: int  # num_hidden_layers
    embd: int  # hidden_size
    ff: int  # intermediate_size
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads
    head_dim: int  # head_dim (Qwen3-0.6B: 16 heads x 128 = 2048, wider than hidden_size 1024)
    vocab: int  # vocab_size
    context: int  # max_position_embeddings
    tied: bool  # tie_word_embeddings: no output.weight, llama.cpp reuses token_embd

    def __post_init__(self) -> None:
        if (
            min(
                self.layers,
                self.embd,
                self.ff,
                self.heads,
                self.kv_heads,
                self.head_dim,
                self.context,
            )
            < 1
        ):
            raise ValueError(f"all shape fields must be positive: {self}")
        if self.heads % self.kv_heads or self.head_dim % 2:
            raise ValueError(f"kv_heads must divide heads and head_dim must be even: {self}")
        if self.vocab < len(build_vocab()) or self.vocab > len(build_vocab()) + 95**2 + 95**3:
            raise ValueError(
                f"vocab must be between {len(build_vocab())} and {len(build_vocab()) + 95**2 + 95**3}: {self}"
            )

    @classmethod
    def of(cls, model: ModelSpec) -> Qwen3Shape:
        """The shape of a conf/model/ entry; only dense models have one."""
        if model.architecture != "dense":
            raise ValueError(
                f"model={model.name}: only dense models can be written (architecture is {model.architecture})"
            )
        return cls(
            **block_dims(model),
            head_dim=model.head_dim,
            vocab=model.vocab_size,
            tied=model.tie_word_embeddings,
        )

    def tensors(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        """``(name, numpy shape)`` of every tensor, in file order."""
        e, f, q, kv = self.embd, self.ff, self.heads * self.head_dim, self.kv_heads * self.head_dim
        block = {"attn_norm": (e,), "attn_q": (q, e), "attn_q_norm": (self.head_dim,), "attn_k": (kv, e),
                 "attn_k_norm": (self.head_dim,), "attn_v": (kv, e), "attn_output": (e, q), "ffn_norm": (e,),
                 "ffn_gate": (f, e), "ffn_up": (f, e), "ffn_down": (e, f)}  # fmt: skip
        yield "token_embd.weight", (self.vocab, e)
        for i in range(self.layers):
            yield from ((f"blk.{i}.{part}.weight", dims) for part, dims in block.items())
        yield "output_norm.weight", (e,)
        if not self.tied:
            yield "output.weight", (self.vocab, e)

    def weight_bytes(self, dtype: Dtype) -> int:
        """Bytes of tensor data (matrices at 2 bytes, norms at 4), padding excluded."""
        return sum(int(np.prod(d)) * (4 if len(d) == 1 else 2) for _, d in self.tensors())


@dataclasses.dataclass(frozen=True)
class HybridShape:
    """A hybrid model's shape (Qwen3.5 / Qwen3.8: Gated DeltaNet and gated full attention) in llama.cpp's
    ``qwen35`` architecture: tiny_hybrid_gguf's layout at the checkpoint's size, with its full vocabulary."""

    layers: TinyHybridShape
    vocab: int
    tied: bool

    @classmethod
    def of(cls, model: ModelSpec) -> HybridShape:
        return cls(TinyHybridShape.of(model), model.vocab_size, model.tie_word_embeddings)

    def tensors(self) -> Iterator[tuple[str, tuple[int, ...]]]:
        """``(name, numpy shape)`` of every tensor, in file order."""
        for name, dims in tensor_specs(self.layers, self.vocab):
            if not (self.tied and name == "output.weight"):
                yield name, dims

    def weight_bytes(self, dtype: Dtype) -> int:
        return sum(
            int(np.prod(d)) * (4 if len(d) == 1 or n.endswith(F32_MATRICES) else 2)
            for n, d in self.tensors()
        )


def shape_of(model: ModelSpec) -> Qwen3Shape | HybridShape:
    """The shape specexp writes for a conf/model/ entry: qwen3 for dense models, qwen35 for hybrid ones."""
    return HybridShape.of(model) if model.architecture == "hybrid" else Qwen3Shape.of(model)


def build_full_vocab(size: int) -> list[tuple[str, float, int]]:
    """tiny_gguf's 354 tokens, then 2- and 3-character strings over ``▁`` and printable ASCII, to
    `size` tokens. Every 3-character token's first two characters are a token, so SPM's bigram
    merges reach it."""
    vocab = build_vocab()
    extra = itertools.chain(
        ("".join(p) for p in itertools.product(_ALPHABET, repeat=2)),
        ("".join(p) for p in itertools.product(_ALPHABET, repeat=3)),
    )
    start = len(vocab)
    for i, text in enumerate(itertools.islice(extra, size - start)):
        vocab.append((text, float(-(start + i)), int(gguf.TokenType.NORMAL)))
    return vocab


def _pool(seed: int, dtype: Dtype) -> np.ndarray:
    """POOL_BYTES of seeded normal draws (std 1/64) as little-endian 16-bit patterns."""
    values = np.random.default_rng([seed, 2]).standard_normal(
        POOL_BYTES // 2, dtype=np.float32
    ) / np.float32(64)
    if dtype == "f16":
        return values.astype("<f2").view(np.uint16)
    return (values.view(np.uint32) >> np.uint32(16)).astype(
        "<u2"
    )  # bf16: the high half of the float32


def _add_metadata(
    writer: gguf.GGUFWriter, shape: Qwen3Shape | HybridShape, dtype: Dtype, name: str
) -> None:
    vocab = build_full_vocab(shape.vocab)
    if isinstance(shape, HybridShape):  # Qwen3.5's rope_theta
        add_hybrid_metadata(
            writer, shape.layers, name, vocab, int(_FILE_TYPE[dtype]), rope_theta=10_000_000.0
        )
        return
    add_transformer_metadata(
        writer,
        name=name,
        file_type=int(_FILE_TYPE[dtype]),
        context=shape.context,
        embd=shape.embd,
        layers=shape.layers,
        ff=shape.ff,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        rope_dims=shape.head_dim,
        head_dim=shape.head_dim,
        rope_theta=1_000_000.0,
        rms_eps=1e-6,
    )  # Qwen3's rope_theta and rms_norm_eps
    writer.add_vocab_size(shape.vocab)
    add_spm_tokenizer(writer, vocab)


def _write_data(out: BinaryIO, n_bytes: int, pool: bytes, offset: int, zero_bytes: int) -> None:
    """`n_bytes` of the pool from `offset` on (cyclically), the first `zero_bytes` of them zeroed."""
    written = 0
    if zero_bytes:
        out.write(bytes(zero_bytes))
        written = zero_bytes
        offset = (offset + zero_bytes) % len(pool)
    while written < n_bytes:
        take = min(CHUNK_BYTES, n_bytes - written, len(pool) - offset)
        out.write(pool[offset : offset + take])
        written += take
        offset = (offset + take) % len(pool)


def write_shaped_model(
    path: Path,
    shape: Qwen3Shape | HybridShape,
    *,
    dtype: Dtype = "bf16",
    seed: int = 0,
    name: str = "specexp-random",
) -> Path:
    """Write a random-weight GGUF of `shape` (qwen3, or qwen35 for a HybridShape) to `path` atomically.

    The same arguments give a byte-identical file.
    """
    if dtype not in _GGML:
        raise ValueError(f"dtype must be one of {', '.join(_GGML)}, got {dtype!r}")
    path = Path(path)
    pool = _pool(seed, dtype).tobytes()
    offsets = np.random.default_rng([seed, 3])
    with new_file(path) as tmp:
        writer = gguf.GGUFWriter(tmp, HYBRID_ARCH if isinstance(shape, HybridShape) else "qwen3")
        _add_metadata(writer, shape, dtype, name)
        specs = list(shape.tensors())
        for tensor_name, dims in specs:
            if len(dims) == 1 or tensor_name.endswith(F32_MATRICES):
                writer.add_tensor_info(
                    tensor_name, dims, np.dtype(np.float32), int(np.prod(dims)) * 4
                )
            else:
                writer.add_tensor_info(
                    tensor_name,
                    dims,
                    np.dtype(np.float16),
                    int(np.prod(dims)) * 2,
                    raw_dtype=_GGML[dtype],
                )
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        assert writer.fout is not None  # opened by write_header_to_file
        out = writer.fout[0]
        for tensor_name, dims in specs:
            writer.write_padding(out, out.tell())
            if len(dims) == 1:  # norm weights ones; a hybrid's decay -1 and dt bias 0
                out.write(one_d_values(tensor_name, dims[0]).astype("<f4").tobytes())
                continue
            if tensor_name.endswith(F32_MATRICES):  # the pool's values, widened
                n, start = int(np.prod(dims)), int(offsets.integers(0, len(pool) // 2))
                values = np.frombuffer(pool, dtype="<u2").take(
                    np.arange(start, start + n), mode="wrap"
                )
                wide = (
                    values.view("<f2").astype("<f4")
                    if dtype == "f16"
                    else (values.astype("<u4") << np.uint32(16)).view("<f4")
                )
                out.write(wide.tobytes())
                continue
            zero = (
                N_ZEROED_OUTPUT_ROWS * dims[1] * 2
                if tensor_name == ("token_embd.weight" if shape.tied else "output.weight")
                else 0
            )
            start = int(offsets.integers(0, len(pool) // 2)) * 2
            _write_data(out, int(np.prod(dims)) * 2, pool, start, zero)
        writer.write_padding(out, out.tell())
        writer.close()
    return path


def load_model(name: str) -> ModelSpec:
    """A conf/model/NAME.yaml entry as a ModelSpec."""
    from omegaconf import OmegaConf

    from specexp.spec import paths

    file = paths.option_file("model", name)
    if file is None:
        raise ValueError(
            f"model={name}: no conf/model/{name}.yaml in {', '.join(map(str, paths.config_dirs()))}; "
            f"accepted: {', '.join(paths.options('model'))}"
        )
    data = OmegaConf.to_container(OmegaConf.load(file))
    return ModelSpec.model_validate(data)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specexp.models.shaped_gguf OUT.gguf --model qwen3-8b --dtype bf16 [--seed N]``."""
    parser = argparse.ArgumentParser(
        prog="python -m specexp.models.shaped_gguf",
        description="Write a random-weight GGUF in a conf/model/ shape.",
    )
    parser.add_argument("out", type=Path, help="output .gguf path")
    parser.add_argument(
        "--model", required=True, help="a conf/model/ entry, e.g. qwen3-8b or qwen3.8-27b"
    )
    parser.add_argument("--dtype", choices=sorted(_GGML), default="bf16")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        shape = shape_of(load_model(args.model))
        path = write_shaped_model(
            args.out, shape, dtype=args.dtype, seed=args.seed, name=f"specexp-random-{args.model}"
        )
    except ValueError as exc:
        parser.error(str(exc))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
