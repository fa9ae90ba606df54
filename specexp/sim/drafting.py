"""What drafting costs per step and how many drafts are accepted, by drafter kind.

Costs follow the drafter's structure:
- a sequential head (MTP, EAGLE) pays, per draft token, one small pass of its layer(s) over
  the batch (reading its own KV of the context) and one lm_head projection (full vocabulary
  for MTP, the reduced draft vocabulary for EAGLE-3);
- a block drafter (DFlash, DSpark) pays one pass of its layers for the whole block of k tokens
  per sequence and one shared lm_head projection of those tokens;
- a separate draft model pays k full passes of itself;
- a lookup (n-gram) pays only its CPU lookup.

Every drafter but a lookup also runs over the prompt tokens a step prefills (prefill_seconds).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from specexp.roofline.costmodel import CostModel, Slice
from specexp.spec.experiment import DrafterCost, DrafterSpec, QuantizationSpec

GOLDEN = 0.6180339887498949
"""The golden ratio's fractional part: the step of the draws' low-discrepancy sequence."""
SILVER = 0.4142135623730951
"""sqrt(2) - 1: the step of the sequence of whether a step drafts at all, apart from the golden one."""
DRAFT_PASS_OVERHEAD = 0.1
"""Share of a target pass's per-step overhead that one drafter pass pays (assumed: its input
preparation and argmax, captured in the same CUDA graph); it also pays the per-layer overhead
of its own layers."""


def head_params(drafter: DrafterSpec, target: CostModel, tokens: int | None = None) -> float:
    """Parameters of a drafter head: target-shaped layers plus its fusion projection; with
    `tokens`, those a pass over that many tokens reads (a MoE layer's routed share)."""
    c, s = drafter.cost, target.shape
    layer = s.full_layer_params_read(tokens) if tokens is not None else s.full_layer_params
    return c.target_layers * (layer or s.layer_params) + c.fusion_inputs * s.hidden_size**2


def head_active_params(drafter: DrafterSpec, target: CostModel) -> float:
    """Parameters of a drafter head one token computes with."""
    c, s = drafter.cost, target.shape
    return c.target_layers * s.full_layer_active_params + c.fusion_inputs * s.hidden_size**2


def head_bytes_per_weight(drafter: DrafterSpec, quant: QuantizationSpec) -> float:
    c = drafter.cost
    return c.bytes_per_weight if c.bytes_per_weight is not None else quant.drafter_bytes_per_weight


def drafter_weight_bytes(
    drafter: DrafterSpec, target: CostModel, quant: QuantizationSpec, draft_model: CostModel | None
) -> float:
    """Device memory the drafter's own weights take (it shares the target's lm_head unless
    it has a draft vocabulary)."""
    if drafter.kind in ("none", "lookup"):
        return 0.0
    if drafter.kind == "draft_model":
        return draft_model.resident_weight_bytes if draft_model is not None else 0.0
    c = drafter.cost
    weights = head_params(drafter, target) * head_bytes_per_weight(drafter, quant)
    if c.lm_head == "draft_vocab" and c.draft_vocab_size:
        weights += c.draft_vocab_size * target.shape.hidden_size * 2.0
    return weights


def drafter_kv_layers(drafter: DrafterSpec) -> float:
    """Attention layers of the drafter that keep their own KV cache of the context."""
    return drafter.cost.target_layers if drafter.kind in ("sequential_head", "block") else 0.0


@dataclass(frozen=True)
class DraftCost:
    """Seconds of drafting per step, for a batch of sequences."""

    drafter: DrafterSpec
    target: CostModel
    draft_model: CostModel | None
    quant: QuantizationSpec
    catch_up: bool = False
    """A draft model runs over the target's batch first (EngineProfile.draft_model_catch_up)."""
    round_overhead_passes: float | None = None
    """The engine's own fixed cost of a drafting round (EngineProfile.drafter_round_overhead_passes);
    None: the drafter's."""

    @cached_property
    def cost(self) -> DrafterCost:
        """The drafter's costs on the target's device (DrafterCost.devices)."""
        return self.drafter.cost.on(self.target.hardware.name)

    @property
    def samples(self) -> bool:
        """It samples every token it drafts from its own logits (every drafter but a lookup): with
        EngineProfile.sampling per_token each costs the engine's sampler (llama.cpp's draft model
        draws each with top-k 10 over the whole vocabulary)."""
        return self.drafter.kind != "lookup"

    def seconds(self, k: int, slices: list[Slice]) -> float:
        """Drafting time before one verify pass of `slices` (one slice per sequence, of its drafted
        tokens plus one; a sequence that drafts nothing brings one token)."""
        if k <= 0 or not slices:
            return 0.0
        return self.draft_seconds(k, slices) + self.round_overhead * self.target.unit_pass_seconds

    @property
    def round_overhead(self) -> float:
        """Fixed cost of a drafting round in single-sequence target passes: the engine's, else the
        drafter's."""
        own = self.round_overhead_passes
        return self.cost.round_overhead_passes if own is None else own

    def _head_dtype(self) -> str:
        """The compute type of a head or block drafter's layers: the checkpoint's, or BF16 for
        drafter weights of their own."""
        return (
            self.quant.compute_dtype["attention"]
            if self.drafter.cost.bytes_per_weight is None
            else "bf16"
        )

    def prefill_seconds(self, prefill: list[Slice]) -> float:
        """The drafter's own pass over the prompt tokens a step prefills (one slice per prompt):
        a head or block drafter keeps its own KV of the context, so its layers run over every
        scheduled token (vLLM's proposer takes the target's hidden states of all of them), and a
        draft model prefills its own context; a lookup reads nothing. These are prompt-sized
        GEMMs, at the target's rates: `kernel_efficiency` is for the small decode-time passes."""
        d, c, t = self.drafter, self.drafter.cost, self.target
        if not prefill or d.kind in ("none", "lookup"):
            return 0.0
        if d.kind == "draft_model":
            return self.draft_model.pass_seconds(prefill) if self.draft_model is not None else 0.0
        dtype = self._head_dtype()
        tokens = sum(s.tokens for s in prefill)
        layers = t.small_pass_seconds(
            head_params(d, t, tokens),
            head_bytes_per_weight(d, self.quant),
            tokens,
            dtype,
            DRAFT_PASS_OVERHEAD,
            0.0,
            c.target_layers,
            compute_params=head_active_params(d, t),
        )
        full = t.shape.full_attention_layers
        return layers + (
            t.attention_seconds(prefill) * drafter_kv_layers(d) / full if full else 0.0
        )

    def _draft_model_seconds(self, k: int, slices: list[Slice]) -> float:
        """A draft model's passes: with `catch_up`, one over the target's verify tokens (its last
        token's logits only); then one a position for the sequences still drafting, a draft shorter
        than k taking one more (llama.cpp's p_min stop: the pass whose token it drew and dropped; a
        draft capped by the tokens left to generate is counted the same, one pass over)."""
        model = self.draft_model
        assert model is not None
        seconds = 0.0
        if self.catch_up:
            seconds += model.pass_seconds(
                [Slice(s.tokens, s.context, int(i == 0)) for i, s in enumerate(slices)]
            )
        passes = [(s, s.tokens if s.tokens <= k else k) for s in slices if s.tokens > 1]
        for i in range(max((n for _, n in passes), default=0)):
            seconds += model.pass_seconds(
                [Slice(tokens=1, context=s.context, logits=1) for s, n in passes if n > i]
            )
        return seconds

    def draft_seconds(self, k: int, slices: list[Slice]) -> float:
        d, c, t = self.drafter, self.cost, self.target
        batch = len(slices)
        if d.kind == "lookup":
            return c.overhead_ms / 1e3
        if d.kind == "draft_model":
            return self._draft_model_seconds(k, slices) + c.overhead_ms / 1e3
        bpw = head_bytes_per_weight(d, self.quant)
        active = head_active_params(d, t)
        dtype = self._head_dtype()
        lm_bytes = self.quant.bytes_per_weight["embeddings"]
        lm_dtype = self.quant.compute_dtype["embeddings"]
        kv = sum(s.context for s in slices) * t.kv_bytes_per_token_per_layer * drafter_kv_layers(d)
        if d.kind == "sequential_head":
            vocab_params = t.shape.lm_head_params
            if c.lm_head == "draft_vocab" and c.draft_vocab_size:
                vocab_params, lm_bytes, lm_dtype = (
                    c.draft_vocab_size * t.shape.hidden_size,
                    2.0,
                    "bf16",
                )
            one = t.small_pass_seconds(
                head_params(d, t, batch),
                bpw,
                batch,
                dtype,
                DRAFT_PASS_OVERHEAD,
                kv,
                c.target_layers,
                compute_params=active,
            )
            head = t.small_pass_seconds(vocab_params, lm_bytes, batch, lm_dtype, 0.0)
            return k * (one + head) / c.kernel_efficiency + c.overhead_ms / 1e3
        # block: one pass drafts the whole block of k tokens per sequence
        tokens = batch * k
        one = t.small_pass_seconds(
            head_params(d, t, tokens),
            bpw,
            tokens,
            dtype,
            DRAFT_PASS_OVERHEAD,
            kv,
            c.target_layers,
            compute_params=active,
        )
        head = t.small_pass_seconds(t.shape.lm_head_params, lm_bytes, tokens, lm_dtype, 0.0)
        return (one + head) / c.kernel_efficiency + c.overhead_ms / 1e3


class AcceptanceModel:
    """Per-position acceptance of one drafter on one workload class, drawn step by step.

    `by_position[i]` is the fraction of drafts whose position i+1 is accepted; a position is
    accepted only if every earlier one was, so a step accepts the positions whose fraction lies
    above one uniform draw u (P(at least i accepted) = by_position[i-1]). The draws are a
    low-discrepancy sequence, u_n = frac(u_0 + n x golden ratio) with u_0 from the seed: each
    step is as random as an independent draw, but a short window (100 drafts) reproduces the
    calibrated fractions within about 1 / 100 instead of 1 / sqrt(100), and cells of one sweep
    share their draws (common random numbers), so arms are compared on equal luck.
    """

    def __init__(
        self, drafter: DrafterSpec, workload_class: str, quantization: str, seed: int
    ) -> None:
        table = drafter.acceptance.get(workload_class) or drafter.acceptance.get("fresh") or []
        # The scale multiplies every position's conditional acceptance: a weaker target state loses
        # drafts at each step, so position i keeps scale**i of its share (not a flat cut, which
        # would leave deep positions accepting almost everything the first one accepted).
        scale = drafter.quantization_scale.get(quantization, 1.0)
        self.by_position = [min(1.0, p * scale ** (i + 1)) for i, p in enumerate(table)]
        self.tail = drafter.acceptance_tail
        self.rate = (drafter.draft_rate or {}).get(workload_class, 1.0)
        self.go_on = (drafter.draft_continue or {}).get(workload_class, 1.0)
        rng = np.random.default_rng(seed)
        self._u = float(rng.random())
        self._v = float(rng.random())
        """The draws of whether a step drafts at all: a sequence of their own."""
        self._thresholds: dict[int, list[float]] = {}

    def _random(self) -> float:
        """The next draw of the sequence."""
        u = self._u
        self._u = (u + GOLDEN) % 1.0
        return u

    def expected(self, k: int) -> list[float]:
        """Expected fraction of drafts accepted at each of k positions."""
        out: list[float] = []
        for i in range(k):
            if i < len(self.by_position):
                out.append(self.by_position[i])
            else:
                out.append((out[-1] if out else 0.0) * self.tail)
        return out

    def thresholds(self, k: int) -> list[float]:
        """P(at least i + 1 positions accepted), i < k: the expected fractions, never rising."""
        if k not in self._thresholds:
            out: list[float] = []
            for p in self.expected(k):
                out.append(min(p, out[-1]) if out else min(p, 1.0))
            self._thresholds[k] = out
        return self._thresholds[k]

    def draw(self, k: int) -> int:
        """Accepted draft tokens of one verify step (0..k)."""
        return self.propose(k)[1]

    def propose(self, k: int) -> tuple[int, int]:
        """(tokens drafted, tokens of them accepted) of one sequence's decode step: (0, 0) when it
        drafts nothing (`draft_rate`). One draw decides both: a draft is i long or more with chance
        draft_continue**(i-1), never shorter than what is accepted."""
        if self.rate < 1.0:
            v, self._v = self._v, (self._v + SILVER) % 1.0
            if v >= self.rate:
                return 0, 0
        u, accepted = self._random(), 0
        for threshold in self.thresholds(k):
            if u >= threshold:
                break
            accepted += 1
        drafted = k
        if self.go_on < 1.0:  # u below go_on**(i - 1): position i drafted
            drafted = 1 + sum(1 for i in range(1, k) if u < self.go_on**i)
        return max(drafted, accepted), accepted
