"""Tiny random-weight llama GGUF models that llama.cpp's llama-server loads on the CPU.

The layout follows docs/engines.md, section 7.1: an SPM vocab of 354
tokens (``<unk>``, ``<s>``, ``</s>``, 256 byte tokens, ``▁`` and printable ASCII), all-F32
tensors, and ``output.weight`` rows 0..258 zeroed so greedy decoding emits only printable
ASCII and never EOS. Draft models reuse the same vocab; ``noise`` perturbs a copy of the
target's weights so that the draft accepts only part of the target's tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import gguf

from specexp.models.in_place import new_file
from specexp.models.tensors import Array, seeded_weights
from specexp.spec.experiment import ModelSpec

FORMAT_VERSION = 1
"""Bump on any change to the written bytes; it is part of :func:`ensure_model`'s cache key."""

N_ZEROED_OUTPUT_ROWS = 259
"""``<unk>``, ``<s>``, ``</s>`` and the 256 byte tokens: never chosen by greedy decoding."""

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)

_TT = gguf.TokenType


@dataclasses.dataclass(frozen=True)
class TinyModelShape:
    """Hyper-parameters of a tiny llama model."""

    layers: int = 4
    """Number of transformer blocks."""
    embd: int = 128
    """Embedding width; must be a multiple of ``heads``."""
    ff: int = 256
    """Feed-forward (SwiGLU) width."""
    heads: int = 4
    """Attention heads; ``embd / heads`` must be even (RoPE)."""
    kv_heads: int = 2
    """Key/value heads (GQA); must divide ``heads``."""
    context: int = 2048
    """Trained context length written to the metadata."""

    def __post_init__(self) -> None:
        if min(self.layers, self.embd, self.ff, self.heads, self.kv_heads, self.context) < 1:
            raise ValueError(f"all shape fields must be positive: {self}")
        if self.embd % self.heads or (self.embd // self.heads) % 2:
            raise ValueError(f"embd/heads must be an even integer: {self}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads must divide heads: {self}")

    @property
    def head_dim(self) -> int:
        """Width of one attention head (also the RoPE dimension count)."""
        return self.embd // self.heads


def block_dims(model: ModelSpec) -> dict[str, int]:
    """A conf/model/ entry's layers, widths, heads and context in the GGUF writers' terms."""
    return {
        "layers": model.num_hidden_layers,
        "embd": model.hidden_size,
        "ff": model.intermediate_size,
        "heads": model.num_attention_heads,
        "kv_heads": model.num_key_value_heads,
        "context": model.max_position_embeddings,
    }


def build_vocab() -> list[tuple[str, float, int]]:
    """Return the 354-token SPM vocab as ``(text, score, token type)`` in id order."""
    vocab = [
        ("<unk>", 0.0, int(_TT.UNKNOWN)),
        ("<s>", 0.0, int(_TT.CONTROL)),
        ("</s>", 0.0, int(_TT.CONTROL)),
    ]
    vocab += [(f"<0x{b:02X}>", 0.0, int(_TT.BYTE)) for b in range(256)]
    normal = ["\u2581"] + [chr(c) for c in range(ord("!"), ord("~") + 1)]
    vocab += [(text, float(-i), int(_TT.NORMAL)) for i, text in enumerate(normal)]
    return vocab


def _tensor_specs(shape: TinyModelShape, n_vocab: int) -> Iterator[tuple[str, tuple[int, ...]]]:
    """Yield ``(name, numpy shape)`` for every tensor, in file order."""
    e, f = shape.embd, shape.ff
    q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    block = {"attn_norm": (e,), "attn_q": (q, e), "attn_k": (kv, e), "attn_v": (kv, e),
             "attn_output": (e, q), "ffn_norm": (e,), "ffn_gate": (f, e), "ffn_up": (f, e),
             "ffn_down": (e, f)}  # fmt: skip
    yield "token_embd.weight", (n_vocab, e)
    for i in range(shape.layers):
        yield from ((f"blk.{i}.{part}.weight", dims) for part, dims in block.items())
    yield "output_norm.weight", (e,)
    yield "output.weight", (n_vocab, e)


def make_tensors(seed: int, shape: TinyModelShape, noise: float = 0.0) -> dict[str, Array]:
    """Return the model's tensors: seeded weights, plus ``noise`` times each tensor's std."""
    tensors = seeded_weights(
        seed, _tensor_specs(shape, len(build_vocab())), noise, noisy_norms=True
    )
    tensors["output.weight"][:N_ZEROED_OUTPUT_ROWS] = 0.0
    return tensors


def _add_metadata(writer: gguf.GGUFWriter, shape: TinyModelShape, name: str) -> None:
    vocab = build_vocab()
    add_transformer_metadata(
        writer,
        name=name,
        file_type=int(gguf.LlamaFileType.ALL_F32),
        context=shape.context,
        embd=shape.embd,
        layers=shape.layers,
        ff=shape.ff,
        heads=shape.heads,
        kv_heads=shape.kv_heads,
        rope_dims=shape.head_dim,
        rope_theta=10000.0,
        rms_eps=1e-5,
    )
    writer.add_vocab_size(len(vocab))
    add_spm_tokenizer(writer, vocab)


def add_transformer_metadata(
    writer: gguf.GGUFWriter,
    *,
    name: str,
    file_type: int,
    context: int,
    embd: int,
    layers: int,
    ff: int,
    heads: int,
    kv_heads: int,
    rope_dims: int,
    rope_theta: float,
    rms_eps: float,
    head_dim: int | None = None,
) -> None:
    """The hyper-parameters every specexp GGUF carries, in one order (the bytes of a model depend on
    it); `head_dim` writes the key and value widths where they differ from embd / heads."""
    writer.add_name(name)
    writer.add_file_type(file_type)
    writer.add_context_length(context)
    writer.add_embedding_length(embd)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    if head_dim is not None:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(rope_dims)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(rms_eps)


def add_spm_tokenizer(writer: gguf.GGUFWriter, vocab: list[tuple[str, float, int]]) -> None:
    """An SPM ("llama") tokenizer of `vocab` (`build_vocab`): <unk> 0, <s> 1, </s> 2, BOS added,
    and specexp's plain chat template."""
    writer.add_tokenizer_model("llama")
    writer.add_token_list([text for text, _, _ in vocab])
    writer.add_token_scores([score for _, score, _ in vocab])
    writer.add_token_types([ttype for _, _, ttype in vocab])
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)


def write_tiny_model(
    path: Path,
    *,
    seed: int = 0,
    shape: TinyModelShape = TinyModelShape(),
    noise: float = 0.0,
    name: str = "specexp-tiny",
) -> Path:
    """Write a tiny llama GGUF model to ``path`` atomically and return ``path``.

    The same arguments always give a byte-identical file. ``noise`` > 0 adds seeded gaussian
    noise (scaled by each tensor's std) to the weights of ``seed``, for draft models; with
    ``noise`` 0 and the same seed and shape, the tensors equal the target's exactly.
    """
    tensors = make_tensors(seed, shape, noise)  # validate before touching the file system
    return write_gguf(
        Path(path), "llama", tensors, lambda writer: _add_metadata(writer, shape, name)
    )


def write_gguf(
    path: Path,
    arch: str,
    tensors: dict[str, Array],
    add_metadata: Callable[[gguf.GGUFWriter], None],
) -> Path:
    """Write a GGUF of architecture `arch` to `path` atomically (a temporary file renamed)."""
    with new_file(path) as tmp:
        writer = gguf.GGUFWriter(tmp, arch)
        add_metadata(writer)
        for tensor_name, data in tensors.items():
            writer.add_tensor(tensor_name, data)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return path


def cached_path(cache_dir: Path, key: list[object], prefix: str = "tiny") -> Path:
    """Where the model of these parameters is cached: `prefix`-<digest of key>.gguf in cache_dir."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"{prefix}-{digest}.gguf"


def ensure_model(
    cache_dir: Path,
    *,
    seed: int = 0,
    shape: TinyModelShape = TinyModelShape(),
    noise: float = 0.0,
    name: str = "specexp-tiny",
) -> Path:
    """Return a cached model file for these parameters, writing it only if it is missing."""
    path = cached_path(cache_dir, [FORMAT_VERSION, seed, dataclasses.asdict(shape), noise, name])
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_tiny_model(path, seed=seed, shape=shape, noise=noise, name=name)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m specexp.models.tiny_gguf OUT.gguf [--seed N] [--noise X] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m specexp.models.tiny_gguf", description="Write a tiny llama GGUF model."
    )
    parser.add_argument("out", type=Path, help="output .gguf path")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--noise", type=float, default=0.0, help="draft noise (default 0)")
    parser.add_argument("--name", default="specexp-tiny", help="general.name")
    shape_fields = [field.name for field in dataclasses.fields(TinyModelShape)]
    for field, default in zip(shape_fields, dataclasses.astuple(TinyModelShape()), strict=True):
        flag = "--" + field.replace("_", "-")
        parser.add_argument(flag, type=int, default=default, help=f"default {default}")
    args = parser.parse_args(argv)
    try:
        shape = TinyModelShape(**{field: getattr(args, field) for field in shape_fields})
        path = write_tiny_model(
            args.out, seed=args.seed, shape=shape, noise=args.noise, name=args.name
        )
    except ValueError as exc:
        parser.error(str(exc))
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
