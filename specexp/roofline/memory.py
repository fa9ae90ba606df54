"""The memory physics every part of specexp shares: bytes per KV-cache element by cache type, a
token's KV bytes, and a model's weight bytes. The simulator's memory plan, the cost model and the
engines' fit checks (llama.cpp refuses a KV cache that cannot fit) all call these."""

from __future__ import annotations

from specexp.roofline.shape import model_shape
from specexp.spec.experiment import ModelSpec

KV_BYTES_PER_ELEMENT = {
    "auto": 2.0,
    "bf16": 2.0,
    "bfloat16": 2.0,
    "f16": 2.0,
    "float16": 2.0,
    "f32": 4.0,
    "fp8": 1.0,
    "fp8_e4m3": 1.0,
    "fp8_e5m2": 1.0,
    "q8_0": 34 / 32,
    "q4_0": 18 / 32,
}
"""Bytes one K or V element takes by cache type: vLLM's and SGLang's `--kv-cache-dtype` names
("auto" is the model's 16-bit dtype) and llama.cpp's `-ctk`/`-ctv` types, whose quantized blocks
carry their scales (ggml's type traits: q8_0 is 34 bytes per 32 elements, q4_0 18 per 32)."""


def kv_bytes_per_element(kv_dtype: str) -> float:
    """Bytes per K or V element; an unknown name counts as 16-bit."""
    return KV_BYTES_PER_ELEMENT.get(kv_dtype, 2.0)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str) -> float:
    """K and V bytes one token of context takes over the model's full-attention layers."""
    return model_shape(model).kv_elements_per_token * kv_bytes_per_element(kv_dtype)


def parameter_bytes(model: ModelSpec, bytes_per_weight: float) -> float:
    """Every weight of the model, input embeddings included, at `bytes_per_weight`."""
    shape = model_shape(model)
    return (shape.total_params + shape.input_embedding_params) * bytes_per_weight
