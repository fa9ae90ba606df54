"""A model's parameters and per-token memory by component, counted from its config fields.

Dense models cache K and V for every layer. Hybrid models cache them only for their
full-attention layers; their linear-attention (Gated DeltaNet) layers carry a fixed-size
recurrent state per sequence instead, plus a short convolution state.

A mixture of experts holds every expert's weights, and a pass reads those of the experts its
tokens were routed to: each token goes through `num_experts_per_tok` of `num_experts`, so a pass
over T tokens reads the expected share 1 - (1 - k/E)^T of them (routing taken as independent and
uniform; real routers are skewed, which reads somewhat less). One decode token reads k/E of the
experts; a verify pass of k + 1 tokens per sequence reads more, which is why speculation gains
less on a MoE than on a dense model of its active size. FLOPs follow the k experts per token.
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
    routed_expert_params: float = 0.0
    """Routed experts' parameters over all MoE layers (part of mlp_params); 0 for dense MLPs."""
    experts: int = 0
    """Routed experts per MoE layer."""
    experts_per_token: int = 0
    """Routed experts each token goes through."""
    full_layer_expert_params: float = 0.0
    """Routed experts' parameters of one full decoder layer (part of full_layer_params)."""

    def touched_share(self, tokens: int) -> float:
        """Expected share of routed experts a pass over `tokens` tokens reads (1 for dense)."""
        if not self.experts:
            return 1.0
        return 1.0 - (1.0 - self.experts_per_token / self.experts) ** max(tokens, 0)

    @property
    def active_share(self) -> float:
        """Share of routed experts one token computes with (k / E; 1 for dense)."""
        return self.experts_per_token / self.experts if self.experts else 1.0

    @property
    def active_mlp_params(self) -> float:
        """MLP parameters one token computes with."""
        return self.mlp_params - self.routed_expert_params * (1.0 - self.active_share)

    def full_layer_params_read(self, tokens: int) -> float:
        """Parameters of one full decoder layer a pass over `tokens` tokens reads."""
        return self.full_layer_params - self.full_layer_expert_params * (
            1.0 - self.touched_share(tokens)
        )

    @property
    def full_layer_active_params(self) -> float:
        """Parameters of one full decoder layer one token computes with."""
        return self.full_layer_params - self.full_layer_expert_params * (1.0 - self.active_share)

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
    # q and o, k and v, and with an output gate the gate's projection
    full_attn = hidden * q_dim * (3 if m.attn_output_gate else 2) + hidden * kv_dim * 2
    dense_mlp = 3.0 * hidden * m.intermediate_size
    mlp_layer, mlp_total, experts_layer, dense_layers = dense_mlp, dense_mlp * layers, 0.0, 0
    if m.moe is not None:
        e = m.moe
        experts_layer = 3.0 * hidden * e.moe_intermediate_size * e.num_experts
        # router, routed experts, shared expert
        mlp_layer = (
            hidden * e.num_experts
            + experts_layer
            + 3.0 * hidden * e.shared_expert_intermediate_size
        )
        dense_layers = min(e.first_k_dense_replace, layers)
        mlp_total = dense_mlp * dense_layers + mlp_layer * (layers - dense_layers)
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
        mlp_params=mlp_total,
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
        routed_expert_params=experts_layer * (layers - dense_layers),
        experts=m.moe.num_experts if m.moe else 0,
        experts_per_token=m.moe.num_experts_per_tok if m.moe else 0,
        full_layer_expert_params=experts_layer,
    )
