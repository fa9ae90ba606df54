"""A model's parameters and per-token memory by component, counted from its config fields.

Dense models cache K and V for every layer. Hybrid models cache them only for their
full-attention layers; their linear-attention (Gated DeltaNet) layers carry a fixed-size
recurrent state per sequence instead, plus a short convolution state.
"""

from __future__ import annotations

from dataclasses import dataclass

from specexp.spec.experiment import ModelSpec

STATE_DTYPE_BYTES = {"float32": 4.0, "bfloat16": 2.0}
"""Bytes per element of the linear-attention recurrent state (vLLM's mamba_ssm_dtype)."""
CONV_STATE_BYTES = 2.0
"""The short causal-convolution state is kept in the activation dtype (bf16)."""
LINEAR_CHUNK = 64
"""Chunk length of the chunked delta-rule prefill kernel (FLA / vLLM Gated DeltaNet)."""


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
    query_heads: int = 1
    """Query heads of a full-attention layer."""
    kv_heads: int = 1
    """K/V heads of a full-attention layer."""
    full_layer_params: float = 0.0
    """One full-attention decoder layer with its MLP (the shape of an MTP / EAGLE layer)."""
    conv_state_elements: float = 0.0
    """Convolution state elements per sequence over the linear-attention layers."""
    linear_flops_per_token: float = 0.0
    """Delta-rule FLOPs per token over the linear-attention layers."""
    input_embedding_params: float = 0.0
    """Input embeddings held in memory besides the lm_head (0 when tied)."""
    linear_conv_dim: float = 0.0
    """Channels of one linear-attention layer's short convolution (2 x key dim + value dim)."""
    linear_conv_width: int = 0
    """Past tokens its convolution state holds (kernel - 1)."""

    @property
    def layer_params(self) -> float:
        """Parameters of one average decoder layer."""
        layers = self.full_attention_layers + self.linear_attention_layers
        return (self.mlp_params + self.attention_params) / layers

    @property
    def total_params(self) -> float:
        """Parameters one forward pass reads (trunk and lm_head; input embeddings are looked up)."""
        return self.mlp_params + self.attention_params + self.lm_head_params

    @property
    def kv_elements_per_layer(self) -> float:
        """K and V elements cached per token by one full-attention layer."""
        return (
            self.kv_elements_per_token / self.full_attention_layers
            if self.full_attention_layers
            else 0.0
        )

    def state_bytes(self, dtype: str) -> float:
        """Recurrent + convolution state of one sequence, bytes (0 for dense models)."""
        return (
            self.linear_state_elements * STATE_DTYPE_BYTES[dtype]
            + self.conv_state_elements * CONV_STATE_BYTES
        )


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
    mlp_layer = 3.0 * hidden * m.intermediate_size
    lin_attn = lin_state = lin_conv = lin_flops = 0.0
    k_dim = v_dim = 0
    if linear:
        dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
        k_dim = (m.linear_num_key_heads or 0) * dk
        v_heads = m.linear_num_value_heads or 0
        v_dim = v_heads * dv
        lin_attn = hidden * (2 * k_dim + 2 * v_dim) + v_dim * hidden + 2 * hidden * v_heads
        lin_state = v_heads * dk * dv
        lin_conv = max((m.linear_conv_kernel_dim or 1) - 1, 0) * (2 * k_dim + v_dim)
        # state update and readout (~6 dk dv per head) plus the intra-chunk attention of the chunked kernel
        lin_flops = v_heads * (6.0 * dk * dv + 2.0 * LINEAR_CHUNK * (dk + dv))
    lm_head = float(m.vocab_size * hidden)
    return ModelShape(
        hidden_size=hidden,
        mlp_params=mlp_layer * layers,
        attention_params=full_attn * full + lin_attn * linear,
        lm_head_params=lm_head,
        full_attention_layers=full,
        linear_attention_layers=linear,
        attention_flops_per_context_token=4.0 * full * q_dim,
        kv_elements_per_token=2.0 * full * kv_dim,
        linear_state_elements=lin_state * linear,
        query_heads=m.num_attention_heads,
        kv_heads=m.num_key_value_heads,
        full_layer_params=full_attn + mlp_layer,
        conv_state_elements=lin_conv * linear,
        linear_flops_per_token=lin_flops * linear,
        input_embedding_params=0.0 if m.tie_word_embeddings else lm_head,
        linear_conv_dim=float(2 * k_dim + v_dim) if linear else 0.0,
        linear_conv_width=max((m.linear_conv_kernel_dim or 1) - 1, 0) if linear else 0,
    )
