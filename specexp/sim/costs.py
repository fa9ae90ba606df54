"""What a simulated engine's time went to: each step's passes by what bounds them
(specexp.roofline.costmodel.PassParts), the drafter's own passes, and the engine's fixed costs
(per-pass and per-step overheads, compute graphs, kernel launches, the sampler, state checkpoints),
summed over the engine's life. A window's costs are their change around it, as its counters are;
the report names the largest as the figure's "why" (specexp.report.why)."""

from __future__ import annotations

from specexp.roofline.costmodel import PassParts

COSTS = ("weights_read", "matmul_compute", "kv_read", "attention_compute", "drafter", "fixed")
"""The costs a simulated step's time is split into (PassParts' fields, the drafter, the rest)."""


class StepCosts:
    """Seconds of engine time by cost, summed step by step."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(COSTS, 0.0)

    def add(self, parts: PassParts, drafter: float, fixed: float, pace: float) -> None:
        """One step: its target passes' `parts`, the drafter's seconds and the engine's `fixed`
        costs besides the passes', all at the start's `pace`."""
        s = self.seconds
        for name, value in zip(PassParts._fields, parts, strict=True):
            s[name] += value * pace
        s["drafter"] += drafter * pace
        s["fixed"] += fixed * pace

    def snapshot(self) -> dict[str, float]:
        return dict(self.seconds)
