"""Roofline cost of one forward pass: max(bytes / bandwidth, FLOPs / compute) + overhead.

Bytes are the weights of every component at its quantization, the KV cache read by every
sequence in the pass, and the recurrent state of linear-attention layers; FLOPs are
2 x params x tokens plus attention over the context. Whether a pass is bandwidth- or
compute-bound falls out of the max, never out of an if-statement about prefill or decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specexp.spec import HardwareSpec, ModelSpec, QuantizationSpec

_KV_BYTES = {"auto": 2.0, "bf16": 2.0, "bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0}
LINEAR_STATE_BYTES = 4.0
"""Gated DeltaNet recurrent state is float32 by default (studies.md)."""


@dataclass(frozen=True)
class Slice:
    """One sequence's share of a forward pass: `tokens` new tokens over `context` cached ones."""

    tokens: int
    context: int
    logits: int
    """Tokens that need an lm_head projection (all verify tokens; the last one of a prefill)."""


@dataclass(frozen=True)
class ModelShape:
    """Parameter counts and per-token memory of a model, by component."""

    hidden_size: int
    mlp_params: float
    attention_params: float
    lm_head_params: float
    full_attention_layers: int
    linear_attention_layers: int
    attention_flops_per_context_token: float
    """FLOPs per new token per context token (QK^T and AV over the full-attention layers)."""
    kv_elements_per_token: float
    """K and V elements cached per token over the full-attention layers."""
    linear_state_elements: float
    """Recurrent state elements per sequence over the linear-attention layers."""

    @property
    def layer_params(self) -> float:
        """Parameters of one average decoder layer (for target-shaped drafter layers)."""
        layers = self.full_attention_layers + self.linear_attention_layers
        return (self.mlp_params + self.attention_params) / layers

    @property
    def total_params(self) -> float:
        return self.mlp_params + self.attention_params + self.lm_head_params


def model_shape(m: ModelSpec) -> ModelShape:
    """Count a model's parameters from its Hugging Face config fields."""
    hidden, layers = m.hidden_size, m.num_hidden_layers
    if m.architecture == "hybrid" and m.full_attention_interval:
        full = layers // m.full_attention_interval
    else:
        full = layers
    linear = layers - full
    q_dim, kv_dim = m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    full_attn = hidden * q_dim * 2 + hidden * kv_dim * 2
    lin_attn, lin_state = 0.0, 0.0
    if linear:
        k_dim = (m.linear_num_key_heads or 0) * (m.linear_key_head_dim or 0)
        v_heads = m.linear_num_value_heads or 0
        v_dim = v_heads * (m.linear_value_head_dim or 0)
        lin_attn = hidden * (2 * k_dim + 2 * v_dim) + v_dim * hidden + 2 * hidden * v_heads
        lin_state = v_heads * (m.linear_key_head_dim or 0) * (m.linear_value_head_dim or 0)
    return ModelShape(
        hidden_size=hidden,
        mlp_params=3.0 * hidden * m.intermediate_size * layers,
        attention_params=full_attn * full + lin_attn * linear,
        lm_head_params=float(m.vocab_size * hidden),
        full_attention_layers=full,
        linear_attention_layers=linear,
        attention_flops_per_context_token=4.0 * full * q_dim,
        kv_elements_per_token=2.0 * full * kv_dim,
        linear_state_elements=lin_state * linear,
    )


@dataclass(frozen=True)
class CostModel:
    """Forward-pass times of one model at one quantization on one device."""

    hardware: HardwareSpec
    shape: ModelShape
    quant: QuantizationSpec
    kv_bytes: float

    @classmethod
    def build(cls, hw: HardwareSpec, model: ModelSpec, quant: QuantizationSpec, kv_cache_dtype: str) -> CostModel:
        kv_bytes = _KV_BYTES.get(kv_cache_dtype, 2.0)
        return cls(hardware=hw, shape=model_shape(model), quant=quant, kv_bytes=kv_bytes)

    @property
    def bandwidth(self) -> float:
        """Achieved bytes per second."""
        hw = self.hardware
        return hw.memory_bandwidth_gbps * 1e9 * hw.achieved.bandwidth

    def flops_rate(self, dtype: str) -> float:
        """Achieved FLOP/s for matmuls in `dtype` (bf16 where `dtype` is not native)."""
        hw = self.hardware
        return hw.peak(dtype) * 1e12 * hw.achieved.compute

    @property
    def weight_bytes(self) -> float:
        s, b = self.shape, self.quant.bytes_per_weight
        return s.mlp_params * b["mlp"] + s.attention_params * b["attention"] + s.lm_head_params * b["embeddings"]

    @property
    def kv_bytes_per_token(self) -> float:
        return self.shape.kv_elements_per_token * self.kv_bytes

    def pass_seconds(self, slices: Sequence[Slice]) -> float:
        """Time of one forward pass over `slices`, overhead included."""
        if not slices:
            return 0.0
        s, q = self.shape, self.quant
        tokens = sum(x.tokens for x in slices)
        logits = sum(x.logits for x in slices)
        moved = self.weight_bytes
        moved += sum(x.context + x.tokens for x in slices) * self.kv_bytes_per_token
        moved += len(slices) * 2 * s.linear_state_elements * LINEAR_STATE_BYTES
        compute = (
            2 * s.mlp_params * tokens / self.flops_rate(q.compute_dtype["mlp"])
            + 2 * s.attention_params * tokens / self.flops_rate(q.compute_dtype["attention"])
            + 2 * s.lm_head_params * logits / self.flops_rate(q.compute_dtype["embeddings"])
            + sum(x.tokens * (x.context + x.tokens / 2) for x in slices)
            * s.attention_flops_per_context_token / self.flops_rate("bf16")
        )
        return max(moved / self.bandwidth, compute) + self.hardware.step_overhead_ms / 1e3

    def small_pass_seconds(self, params: float, bytes_per_weight: float, tokens: int, dtype: str,
                           overhead_share: float) -> float:
        """A pass of a small network (a drafter head): its weights once, 2 x params x tokens FLOPs."""
        moved = params * bytes_per_weight
        compute = 2 * params * tokens / self.flops_rate(dtype)
        return max(moved / self.bandwidth, compute) + overhead_share * self.hardware.step_overhead_ms / 1e3
