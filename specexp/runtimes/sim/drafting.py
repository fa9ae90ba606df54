"""What drafting costs per step and how many drafts are accepted, by drafter kind."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specexp.runtimes.sim.costmodel import CostModel, Slice
from specexp.spec import DrafterSpec, QuantizationSpec

DRAFT_PASS_OVERHEAD = 0.1
"""Share of a target pass's fixed overhead that one drafter pass pays (captured in the same graph)."""


@dataclass(frozen=True)
class DraftCost:
    """Seconds of drafting per step, for a batch of sequences."""

    drafter: DrafterSpec
    target: CostModel
    draft_model: CostModel | None
    quant: QuantizationSpec

    def seconds(self, k: int, slices: list[Slice]) -> float:
        """Drafting time before one verify pass of `slices` (one slice per sequence)."""
        if k <= 0 or not slices:
            return 0.0
        d, c = self.drafter, self.drafter.cost
        batch = len(slices)
        if d.kind == "lookup":
            return c.overhead_ms / 1e3
        if d.kind == "draft_model":
            assert self.draft_model is not None
            passes = [Slice(tokens=1, context=s.context, logits=1) for s in slices]
            return k * self.draft_model.pass_seconds(passes) + c.overhead_ms / 1e3
        shape = self.target.shape
        head_params = c.target_layers * shape.layer_params + c.fusion_inputs * shape.hidden_size ** 2
        head_bytes = c.bytes_per_weight if c.bytes_per_weight is not None else self.quant.drafter_bytes_per_weight
        dtype = self.quant.compute_dtype["attention"] if c.bytes_per_weight is None else "bf16"
        lm_bytes = self.quant.bytes_per_weight["embeddings"]
        lm_dtype = self.quant.compute_dtype["embeddings"]
        if d.kind == "sequential_head":
            vocab_params = shape.lm_head_params
            if c.lm_head == "draft_vocab" and c.draft_vocab_size:
                vocab_params = c.draft_vocab_size * shape.hidden_size
            one = self.target.small_pass_seconds(head_params, head_bytes, batch, dtype, DRAFT_PASS_OVERHEAD)
            head = self.target.small_pass_seconds(vocab_params, lm_bytes, batch, lm_dtype, 0.0)
            return k * (one + head) + c.overhead_ms / 1e3
        # block: one pass drafts the whole block of k tokens per sequence
        tokens = batch * k
        one = self.target.small_pass_seconds(head_params, head_bytes, tokens, dtype, DRAFT_PASS_OVERHEAD)
        head = self.target.small_pass_seconds(shape.lm_head_params, lm_bytes, tokens, lm_dtype, 0.0)
        return one + head + c.overhead_ms / 1e3


class AcceptanceModel:
    """Per-position acceptance of one drafter on one workload class, sampled with a seeded RNG.

    `by_position[i]` is the fraction of drafts whose position i+1 is accepted; a position is
    accepted only if every earlier one was, so it is drawn with the conditional probability
    by_position[i] / by_position[i-1].
    """

    def __init__(self, drafter: DrafterSpec, workload_class: str, quantization: str, seed: int) -> None:
        table = drafter.acceptance.get(workload_class) or drafter.acceptance.get("fresh") or []
        scale = drafter.quantization_scale.get(quantization, 1.0)
        self.by_position = [min(1.0, p * scale) for p in table]
        self.tail = drafter.acceptance_tail
        self.rng = np.random.default_rng(seed)

    def expected(self, k: int) -> list[float]:
        """Expected fraction of drafts accepted at each of k positions."""
        out: list[float] = []
        for i in range(k):
            if i < len(self.by_position):
                out.append(self.by_position[i])
            else:
                out.append((out[-1] if out else 0.0) * self.tail)
        return out

    def draw(self, k: int) -> int:
        """Accepted draft tokens of one verify step (0..k)."""
        expected = self.expected(k)
        accepted, prior = 0, 1.0
        for p in expected:
            conditional = 0.0 if prior <= 0 else min(1.0, p / prior)
            if self.rng.random() >= conditional:
                break
            accepted += 1
            prior = p
        return accepted
