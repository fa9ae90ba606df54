"""The random-weight models specexp writes for a conf/model/ entry that asks for one
(`generated_gguf` for llama-server, `generated_hf` for the engines that load a Hugging Face folder):
the model's shape in each writer's terms, and the cached file or folder. For plumbing only: their
weights are random, so no figure about acceptance, speedup or answers is made on them."""

from __future__ import annotations

from pathlib import Path

from specexp.models import tiny_gguf, tiny_hf, tiny_hybrid_gguf
from specexp.spec.cache import cache_dir
from specexp.spec.experiment import ModelSpec


def gguf_file(model: ModelSpec) -> Path:
    """The GGUF of a model with `generated_gguf`, written once into the cache; a hybrid shape
    llama.cpp cannot take raises ValueError naming the model and the key."""
    g = model.generated_gguf
    assert g is not None
    root = cache_dir() / "models"
    if model.architecture == "hybrid":
        hybrid = tiny_hybrid_gguf.TinyHybridShape.of(model)
        return tiny_hybrid_gguf.ensure_model(root, seed=g.seed, shape=hybrid)
    shape = tiny_gguf.TinyModelShape(**tiny_gguf.block_dims(model))
    return tiny_gguf.ensure_model(root, seed=g.seed, shape=shape, noise=g.noise)


def hf_folder(model: ModelSpec) -> Path:
    """The Hugging Face folder of a model with `generated_hf`, written once into the cache."""
    g = model.generated_hf
    assert g is not None
    shape = tiny_hf.HfShape(
        layers=model.num_hidden_layers,
        hidden=model.hidden_size,
        ff=model.intermediate_size,
        heads=model.num_attention_heads,
        kv_heads=model.num_key_value_heads,
        head_dim=model.head_dim,
        context=model.max_position_embeddings,
    )
    return tiny_hf.ensure_model(cache_dir() / "models", seed=g.seed, shape=shape, noise=g.noise)
