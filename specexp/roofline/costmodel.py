"""Cost of one forward pass: a roofline per kernel group, summed, plus a fixed overhead
(per step, and per decoder layer: the launch gaps of its small kernels).

A pass runs three groups of kernels one after the other, and each is bound by its own
roofline, max(bytes / bandwidth, FLOPs / compute):

- the weight matmuls (every component at its quantization, lm_head for the tokens that need
  logits): bandwidth-bound at small batch, compute-bound once enough tokens share a read;
- attention over the cached context: reads the KV cache of every sequence; single-token
  decode uses split-KV kernels at full bandwidth, several new tokens per sequence (verify)
  may use a slower path (`Achieved.multi_query_attention`: every query head re-reads its
  K/V, and too few thread blocks at small batch leave the GPU idle);
- linear attention (hybrid models): reads each sequence's recurrent state once and writes it
  back once per kept copy (a verify pass keeps one per draft position, for rollback).

A mixture of experts reads the routed experts its tokens touch (`ModelShape.touched_share`) and
computes with the k experts of each token.

On a CPU (`Achieved.serial_batched_matmuls`) a pass over more than one token streams the weights
and computes one after the other: it pays their sum, not their max.

Summing the groups, rather than taking one max over the whole pass, is what the H200 step
times show (benchmarks/calibration.py): at 64 x 16 verify tokens the GEMMs are
compute-bound while attention still pays its KV reads. Whether a group is bandwidth- or
compute-bound falls out of its max, never out of an if-statement about prefill or decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from specexp.roofline.memory import kv_bytes_per_element
from specexp.roofline.shape import ModelShape, model_shape
from specexp.spec.experiment import Component, ModelSpec, QuantizationSpec
from specexp.spec.hardware import HardwareSpec

__all__ = ["CostModel", "ModelShape", "PassParts", "Slice", "model_shape"]

ACTIVATION_BYTES = 2
"""Bytes of one activation an all-reduce carries (bf16)."""
QUERY_TILE = 64
"""Query rows one attention thread block handles (flash-attention-style kernels)."""


class Slice(NamedTuple):
    """One sequence's share of a forward pass: `tokens` new tokens over `context` cached ones.
    (A named tuple: the simulator makes one per sequence per step.)"""

    tokens: int
    context: int
    logits: int
    """Tokens that need an lm_head projection (all verify tokens; the last one of a prefill)."""
    state_writes: int = 1
    """Copies of the recurrent state written back (hybrid models): 1, or k + 1 in a verify pass."""


class PassParts(NamedTuple):
    """A pass's time by what bounds each of its kernel groups: a group's time goes to the side of
    its roofline that sets it (the weights' read or the matmuls' compute; the KV cache's and the
    recurrent state's read or attention's compute), and the fixed per-pass overhead apart. Their
    sum is the pass's time."""

    weights_read: float = 0.0
    matmul_compute: float = 0.0
    kv_read: float = 0.0
    attention_compute: float = 0.0
    all_reduce: float = 0.0
    """Tensor parallelism: the all-reduces between the GPUs (0 on one GPU)."""
    fixed: float = 0.0


def _bound(moved: float, compute: float) -> tuple[float, float]:
    """A roofline's time on the side that sets it: (moved, 0) or (0, compute)."""
    return (moved, 0.0) if moved >= compute else (0.0, compute)


@dataclass(frozen=True)
class CostModel:
    """Forward-pass times of one model at one quantization on one device."""

    hardware: HardwareSpec
    shape: ModelShape
    quant: QuantizationSpec
    kv_bytes: float
    state_dtype: str = "float32"
    tensor_parallel: int = 1
    """GPUs the model is split over: each reads and computes its share of every weight matmul, of
    attention's heads and of the recurrent state, and every layer's two outputs (attention's and the
    MLP's, or the linear mixer's) are all-reduced between them over the hardware's interconnect."""

    @classmethod
    def build(
        cls,
        hw: HardwareSpec,
        model: ModelSpec,
        quant: QuantizationSpec,
        kv_cache_dtype: str,
        tensor_parallel: int = 1,
    ) -> CostModel:
        kv_bytes = kv_bytes_per_element(kv_cache_dtype)
        return cls(
            hardware=hw,
            shape=model_shape(model),
            quant=quant,
            kv_bytes=kv_bytes,
            state_dtype=model.linear_state_dtype,
            tensor_parallel=tensor_parallel,
        )

    @cached_property
    def kv_split(self) -> int:
        """GPUs the KV cache is split over: its KV heads are, as far as there are heads (beyond,
        each GPU holds a copy of some)."""
        return max(min(self.tensor_parallel, self.shape.kv_heads), 1)

    def all_reduce_seconds(self, tokens: int) -> float:
        """A pass's all-reduces over `tokens` tokens: two a layer (its mixer's output and its MLP's),
        each a ring all-reduce of tokens x hidden activations in bf16, 2 (n - 1) / n of the bytes
        over each GPU's link, plus the link's fixed latency; 0 on one GPU."""
        n, link = self.tensor_parallel, self.hardware.interconnect
        if n < 2 or link is None or tokens <= 0:
            return 0.0
        shape = self.shape
        layers = shape.full_attention_layers + shape.linear_attention_layers
        moved = 2 * (n - 1) / n * tokens * shape.hidden_size * ACTIVATION_BYTES
        one = link.latency_us / 1e6 + moved / (link.bandwidth_gbps * 1e9 * link.achieved)
        return 2 * layers * one

    # --- rates ------------------------------------------------------------------------

    @cached_property
    def bandwidth(self) -> float:
        """Achieved bytes per second (KV cache, states, bf16 weights)."""
        hw = self.hardware
        return hw.memory_bandwidth_gbps * 1e9 * hw.achieved.bandwidth

    def weight_bandwidth(self, dtype: str) -> float:
        """Achieved bytes per second streaming matmul weights that compute in `dtype`."""
        a = self.hardware.achieved
        fraction = a.bandwidth_by_dtype.get(dtype, a.bandwidth)  # type: ignore[call-overload]
        return self.hardware.memory_bandwidth_gbps * 1e9 * fraction

    def flops_rate(self, dtype: str) -> float:
        """Achieved FLOP/s for matmuls in `dtype`.

        Native data types run at their own peak; the others are dequantized to bf16 inside the
        kernel (Marlin-style), which reaches `dequant_compute` of the bf16 GEMM rate.
        """
        hw, a = self.hardware, self.hardware.achieved
        bf16 = (
            float(hw.peak_tflops.get("bf16") or 0.0)
            * 1e12
            * a.compute_by_dtype.get("bf16", a.compute)
        )
        if dtype == "bf16":
            return bf16
        if dtype in hw.native_dtypes and hw.peak_tflops.get(dtype):
            return hw.peak(dtype) * 1e12 * a.compute_by_dtype.get(dtype, a.compute)
        return bf16 * a.dequant_compute

    @cached_property
    def attention_rate(self) -> float:
        """Achieved FLOP/s of attention kernels (bf16)."""
        hw, a = self.hardware, self.hardware.achieved
        frac = (
            a.attention_compute
            if a.attention_compute is not None
            else a.compute_by_dtype.get("bf16", a.compute)
        )
        return float(hw.peak_tflops.get("bf16") or 0.0) * 1e12 * frac

    @cached_property
    def overhead_seconds(self) -> float:
        """Fixed cost of one pass: per step, and per decoder layer."""
        hw, s = self.hardware, self.shape
        layers = s.full_attention_layers + s.linear_attention_layers
        return hw.step_overhead_ms / 1e3 + layers * hw.layer_overhead_us / 1e6

    # --- sizes ------------------------------------------------------------------------

    def _params(self) -> dict[Component, float]:
        """Parameters held per component (every expert of a mixture of experts)."""
        s = self.shape
        return {
            "mlp": s.mlp_params,
            "attention": s.attention_params,
            "embeddings": s.lm_head_params,
        }

    def _active_params(self) -> dict[Component, float]:
        """Parameters one token computes with per component (k experts of a mixture)."""
        return {**self._params(), "mlp": self.shape.active_mlp_params}

    @property
    def weight_bytes(self) -> float:
        """Every weight a pass may read (the input embeddings are looked up, not read); a pass
        over few tokens of a mixture of experts reads less (`weight_bytes_read`)."""
        b = self.quant.bytes_per_weight
        return sum(p * b[c] for c, p in self._params().items())

    def weight_bytes_read(self, tokens: int) -> float:
        """Weights a pass over `tokens` tokens reads: the routed experts' expected share."""
        s, b = self.shape, self.quant.bytes_per_weight
        unread = s.routed_expert_params * (1.0 - s.touched_share(tokens))
        return self.weight_bytes - unread * b["mlp"]

    @property
    def resident_weight_bytes(self) -> float:
        """Weights held in device memory: what a pass reads plus untied input embeddings."""
        return (
            self.weight_bytes
            + self.shape.input_embedding_params * self.quant.bytes_per_weight["embeddings"]
        )

    @cached_property
    def kv_bytes_per_token(self) -> float:
        return self.shape.kv_elements_per_token * self.kv_bytes

    @property
    def kv_bytes_per_token_per_layer(self) -> float:
        return self.shape.kv_elements_per_layer * self.kv_bytes

    @cached_property
    def state_bytes(self) -> float:
        """Recurrent state of one sequence (hybrid models), bytes."""
        return self.shape.state_bytes(self.state_dtype)

    # --- passes -----------------------------------------------------------------------

    @cached_property
    def _matmul_terms(self) -> tuple[float, float, float, float]:
        """(seconds to stream every weight once, the routed experts' part of them, compute
        seconds per token, per projected logit)."""
        q, moved, per_token, per_logit = self.quant, 0.0, 0.0, 0.0
        active = self._active_params()
        for c, params in self._params().items():
            dtype = q.compute_dtype[c]
            moved += params * q.bytes_per_weight[c] / self.weight_bandwidth(dtype)
            if c == "embeddings":
                per_logit += 2 * params / self.flops_rate(dtype)
            else:
                per_token += 2 * active[c] / self.flops_rate(dtype)
        mlp_dtype = q.compute_dtype["mlp"]
        routed = (
            self.shape.routed_expert_params
            * q.bytes_per_weight["mlp"]
            / self.weight_bandwidth(mlp_dtype)
        )
        return moved, routed, per_token, per_logit

    def matmul_seconds(self, tokens: int, logits: int) -> float:
        """The weight matmuls of a pass over `tokens` tokens, `logits` of them projected."""
        return sum(self.matmul_split(tokens, logits))

    def matmul_split(self, tokens: int, logits: int) -> tuple[float, float]:
        """The weight matmuls' time as (weights read, compute): the side that bounds them, or both
        where a CPU loads, then computes."""
        every, routed, per_token, per_logit = self._matmul_terms
        moved = every - routed * (1.0 - self.shape.touched_share(tokens))
        a = self.hardware.achieved
        if a.small_batch_tflops is None:
            compute = tokens * per_token + logits * per_logit
        else:
            compute = self._small_batch_compute(tokens, logits)
        moved, compute = moved / self.tensor_parallel, compute / self.tensor_parallel
        if a.serial_batched_matmuls and tokens > 1:  # a CPU's cores load, then compute
            return moved, compute
        return _bound(moved, compute)

    def _small_batch_compute(self, tokens: int, logits: int) -> float:
        """Matmul compute seconds when small-batch kernels cap the rate (`Achieved.small_batch_tflops`):
        each component at min(its data type's rate, the cap x max(1, rows / small_batch_rows))."""
        a, q, seconds = self.hardware.achieved, self.quant, 0.0
        cap = float(a.small_batch_tflops or 0.0) * 1e12
        for c, params in self._active_params().items():
            rows = logits if c == "embeddings" else tokens
            if rows <= 0:
                continue
            rate = min(
                self.flops_rate(q.compute_dtype[c]), cap * max(1.0, rows / a.small_batch_rows)
            )
            seconds += 2 * params * rows / rate
        return seconds

    def attention_seconds(self, slices: Sequence[Slice]) -> float:
        """Attention over the cached context, single-token and multi-token slices apart."""
        return sum(self.attention_split(slices))

    def attention_split(self, slices: Sequence[Slice]) -> tuple[float, float]:
        """Attention's time as (KV read, compute), each group's on the side that bounds it."""
        per_ctx, kv = self.shape.attention_flops_per_context_token, self.kv_bytes_per_token
        bandwidth, rate = self.bandwidth, self.attention_rate
        read = compute = 0.0
        for multi in (False, True):
            group = [x for x in slices if (x.tokens > 1) == multi]
            if not group:
                continue
            moved = sum(x.context + x.tokens for x in group) * kv
            flops = sum(x.tokens * (x.context + x.tokens / 2) for x in group) * per_ctx
            r, c = _bound(
                moved / self.kv_split / (bandwidth * self._kv_efficiency(group, multi)),
                flops / self.tensor_parallel / rate,
            )
            read, compute = read + r, compute + c
        return read, compute

    def _kv_efficiency(self, group: Sequence[Slice], multi: bool) -> float:
        """KV bytes read per second over the achieved bandwidth: 1 for split-KV decode. On the
        multi-token path each query head re-reads its group's K/V (so / group size), at
        `multi_query_attention`, scaled down when too few thread blocks (sequences x query heads
        x query tiles) run."""
        a, s = self.hardware.achieved, self.shape
        if not multi or a.multi_query_attention is None:
            return 1.0
        group_size = max(s.query_heads / max(s.kv_heads, 1), 1.0)
        blocks = sum(s.query_heads * -(-x.tokens // QUERY_TILE) for x in group)
        saturation = a.multi_query_blocks
        occupancy = min(1.0, blocks / saturation) if saturation else 1.0
        return a.multi_query_attention * occupancy / group_size

    def linear_attention_seconds(self, slices: Sequence[Slice]) -> float:
        """Recurrent-state traffic and delta-rule FLOPs of the linear-attention layers."""
        return sum(self.linear_attention_split(slices))

    def linear_attention_split(self, slices: Sequence[Slice]) -> tuple[float, float]:
        """The linear-attention layers' time as (state read and written, compute)."""
        if not self.shape.linear_attention_layers:
            return 0.0, 0.0
        state = self.state_bytes / self.tensor_parallel
        own = 2 * len(slices) * state  # each sequence's state read and written back
        copies = sum(x.state_writes - 1 for x in slices) * state  # a verify pass's further copies
        share = self.hardware.achieved.recurrent_state or 1.0
        flops = sum(x.tokens for x in slices) * self.shape.linear_flops_per_token
        return _bound(
            own / (self.bandwidth * share) + copies / self.bandwidth,
            flops / self.tensor_parallel / self.attention_rate,
        )

    def pass_seconds(self, slices: Sequence[Slice]) -> float:
        """Time of one forward pass over `slices`, overhead included."""
        return sum(self.pass_parts(slices)) if slices else 0.0

    def pass_parts(self, slices: Sequence[Slice]) -> PassParts:
        """`pass_seconds` by what bounds each part (PassParts)."""
        if not slices:
            return PassParts()
        tokens = sum(x.tokens for x in slices)
        logits = sum(x.logits for x in slices)
        weights, matmul = self.matmul_split(tokens, logits)
        kv, attention = self.attention_split(slices)
        state, linear = self.linear_attention_split(slices)
        return PassParts(
            weights,
            matmul,
            kv + state,
            attention + linear,
            self.all_reduce_seconds(tokens),
            self.overhead_seconds,
        )

    @cached_property
    def unit_pass_seconds(self) -> float:
        """One decode pass of one sequence over an empty context: the unit of drafting overheads."""
        return self.pass_seconds([Slice(tokens=1, context=0, logits=1)])

    def small_pass_seconds(
        self,
        params: float,
        bytes_per_weight: float,
        tokens: int,
        dtype: str,
        overhead_share: float,
        kv_bytes: float = 0.0,
        layers: float = 0.0,
        compute_params: float | None = None,
    ) -> float:
        """A pass of a small network (a drafter head): `params` read once, 2 x `compute_params`
        (else `params`) x tokens FLOPs, `kv_bytes` of KV cache read by its attention layers,
        `overhead_share` of the per-step overhead and the per-layer overhead of its `layers`."""
        moved = params * bytes_per_weight / self.weight_bandwidth(dtype) + kv_bytes / self.bandwidth
        compute = 2 * (params if compute_params is None else compute_params) * tokens
        compute /= self.flops_rate(dtype)
        hw = self.hardware
        return (
            max(moved, compute)
            + overhead_share * hw.step_overhead_ms / 1e3
            + layers * hw.layer_overhead_us / 1e6
        )
