"""Tiny random-weight hybrid GGUF models that llama.cpp's llama-server loads on the CPU.

A hybrid model in llama.cpp's ``qwen35`` architecture (the Qwen3.5 / Qwen3.8 family): Gated
DeltaNet linear-attention layers with a recurrent state, and a gated full-attention layer every
``full_attention_interval``-th layer (src/models/qwen35.cpp, llama.cpp 0c1e57098, names each tensor
and its shape). The vocabulary, tokenizer, chat template and zeroed output rows are
:mod:`specexp.models.tiny_gguf`'s, so greedy decoding emits printable ASCII and never EOS. A real
llama-server cannot cut a recurrent state back, so this model shows where it resumes a prompt's
cached prefix: from its context checkpoints (tools/server/server-context.cpp), not token by token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np

from specexp.models.tensors import Array, seeded_weights
from specexp.models.tiny_gguf import (
    N_ZEROED_OUTPUT_ROWS,
    add_spm_tokenizer,
    add_transformer_metadata,
    block_dims,
    build_vocab,
    cached_path,
    write_gguf,
)
from specexp.spec.experiment import ModelSpec

FORMAT_VERSION = 1
"""Bump on any change to the written bytes; it is part of :func:`ensure_model`'s cache key."""

ARCH = "qwen35"


@dataclasses.dataclass(frozen=True)
class TinyHybridShape:
    """Hyper-parameters of a tiny qwen35 model, in ModelSpec's terms."""

    layers: int = 4
    embd: int = 128
    ff: int = 256
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    full_attention_interval: int = 4
    linear_key_heads: int = 2
    linear_value_heads: int = 4
    linear_head_dim: int = 32
    """Key and value head width of the linear layers (llama.cpp's ssm.state_size sets both)."""
    conv_kernel: int = 4
    context: int = 4096

    def __post_init__(self) -> None:
        if min(dataclasses.astuple(self)) < 1:
            raise ValueError(f"all shape fields must be positive: {self}")
        if self.heads % self.kv_heads or self.linear_value_heads % self.linear_key_heads:
            raise ValueError(
                f"kv_heads must divide heads, linear_key_heads linear_value_heads: {self}"
            )
        if self.head_dim % 8:
            raise ValueError(
                f"head_dim must be a multiple of 8 (four rope sections of even width): {self}"
            )

    @classmethod
    def of(cls, model: ModelSpec) -> TinyHybridShape:
        """The shape of a hybrid ModelSpec; its linear key and value heads must be as wide."""
        if model.linear_key_head_dim != model.linear_value_head_dim:
            raise ValueError(
                f"model={model.name}: llama.cpp's qwen35 takes one linear head width "
                f"(linear_key_head_dim {model.linear_key_head_dim}, "
                f"linear_value_head_dim {model.linear_value_head_dim})"
            )
        return cls(
            **block_dims(model),
            head_dim=model.head_dim,
            full_attention_interval=model.full_attention_interval or 4,
            linear_key_heads=model.linear_num_key_heads or 1,
            linear_value_heads=model.linear_num_value_heads or 1,
            linear_head_dim=model.linear_key_head_dim or 1,
            conv_kernel=model.linear_conv_kernel_dim or 1,
        )

    def is_full_attention(self, layer: int) -> bool:
        return (layer + 1) % self.full_attention_interval == 0

    @property
    def value_dim(self) -> int:
        return self.linear_value_heads * self.linear_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.linear_key_heads * self.linear_head_dim + self.value_dim


def tensor_specs(shape: TinyHybridShape, n_vocab: int) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Yield ``(name, numpy shape)`` for every tensor (numpy shapes are llama.cpp's reversed)."""
    e, f, hd = shape.embd, shape.ff, shape.head_dim
    yield "token_embd.weight", (n_vocab, e)
    for i in range(shape.layers):
        block: dict[str, tuple[int, ...]] = {
            "attn_norm.weight": (e,),
            "post_attention_norm.weight": (e,),
        }
        if shape.is_full_attention(i):  # the query projection carries the output gate too
            block.update(
                {
                    "attn_q.weight": (2 * shape.heads * hd, e),
                    "attn_k.weight": (shape.kv_heads * hd, e),
                    "attn_v.weight": (shape.kv_heads * hd, e),
                    "attn_output.weight": (e, shape.heads * hd),
                    "attn_q_norm.weight": (hd,),
                    "attn_k_norm.weight": (hd,),
                }
            )
        else:
            nv = shape.linear_value_heads
            block.update(
                {
                    "attn_qkv.weight": (shape.conv_dim, e),
                    "attn_gate.weight": (shape.value_dim, e),
                    "ssm_conv1d.weight": (shape.conv_dim, shape.conv_kernel),
                    "ssm_dt.bias": (nv,),
                    "ssm_a": (nv,),
                    "ssm_beta.weight": (nv, e),
                    "ssm_alpha.weight": (nv, e),
                    "ssm_norm.weight": (shape.linear_head_dim,),
                    "ssm_out.weight": (e, shape.value_dim),
                }
            )
        block.update(
            {"ffn_gate.weight": (f, e), "ffn_up.weight": (f, e), "ffn_down.weight": (e, f)}
        )
        yield from ((f"blk.{i}.{name}", dims) for name, dims in block.items())
    yield "output_norm.weight", (e,)
    yield "output.weight", (n_vocab, e)


def make_tensors(seed: int, shape: TinyHybridShape) -> dict[str, Array]:
    """Seeded weights: matrices scaled by 1/sqrt(fan-in), norms ones, decay A -1 and dt bias 0."""
    tensors = seeded_weights(seed, tensor_specs(shape, len(build_vocab())), one_d=one_d_values)
    tensors["output.weight"][:N_ZEROED_OUTPUT_ROWS] = 0.0
    return tensors


def one_d_values(name: str, n: int) -> Array:
    """A 1-D tensor's values: the decay A -1 and the dt bias 0 (a stable recurrence), norms ones."""
    if name.endswith("ssm_a"):
        return -np.ones(n, dtype=np.float32)
    if name.endswith("ssm_dt.bias"):
        return np.zeros(n, dtype=np.float32)
    return np.ones(n, dtype=np.float32)


def add_metadata(
    writer: gguf.GGUFWriter,
    shape: TinyHybridShape,
    name: str,
    vocab: list[tuple[str, float, int]] | None = None,
    file_type: int = int(gguf.LlamaFileType.ALL_F32),
    rope_theta: float = 10000.0,
) -> None:
    """The qwen35 hyper-parameters of `shape`, and an SPM tokenizer of `vocab` (tiny_gguf's by default)."""
    vocab = vocab or build_vocab()
    add_transformer_metadata(
        writer,
        name=name,
        file_type=file_type,
        context=shape.context,
        embd=shape.embd,
        layers=shape.layers,
        ff=shape.ff,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        rope_dims=shape.head_dim,
        rope_theta=rope_theta,
        rms_eps=1e-6,
        head_dim=shape.head_dim,
    )
    writer.add_array(f"{ARCH}.rope.dimension_sections", [shape.head_dim // 8] * 4)
    writer.add_uint32(f"{ARCH}.ssm.conv_kernel", shape.conv_kernel)
    writer.add_uint32(f"{ARCH}.ssm.inner_size", shape.value_dim)
    writer.add_uint32(f"{ARCH}.ssm.state_size", shape.linear_head_dim)
    writer.add_uint32(f"{ARCH}.ssm.time_step_rank", shape.linear_value_heads)
    writer.add_uint32(f"{ARCH}.ssm.group_count", shape.linear_key_heads)
    writer.add_uint32(f"{ARCH}.full_attention_interval", shape.full_attention_interval)
    writer.add_vocab_size(len(vocab))
    add_spm_tokenizer(writer, vocab)


def write_model(
    path: Path,
    *,
    seed: int = 0,
    shape: TinyHybridShape = TinyHybridShape(),
    name: str = "specexp-tiny-hybrid",
) -> Path:
    """Write a tiny qwen35 GGUF to ``path`` atomically; the same arguments give the same bytes."""
    tensors = make_tensors(seed, shape)
    return write_gguf(Path(path), ARCH, tensors, lambda writer: add_metadata(writer, shape, name))


def ensure_model(
    cache_dir: Path,
    *,
    seed: int = 0,
    shape: TinyHybridShape = TinyHybridShape(),
    name: str = "specexp-tiny-hybrid",
) -> Path:
    """A cached model file for these parameters, written only if it is missing."""
    path = cached_path(
        cache_dir, [FORMAT_VERSION, ARCH, seed, dataclasses.asdict(shape), name], "tiny-hybrid"
    )
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_model(path, seed=seed, shape=shape, name=name)
    return path
