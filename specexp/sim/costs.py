"""What a simulated engine's time went to: each step's passes by what bounds them
(specexp.roofline.costmodel.PassParts), the drafter's own passes, and the engine's fixed costs
(per-pass and per-step overheads, compute graphs, kernel launches, the sampler, state checkpoints),
summed over the engine's life, apart for the steps that prefill (any prompt chunk in them) and the
steps that only decode. A window's costs are their change around it, as its counters are; the
report names the largest as the figure's "why" (specexp.report.why): a decode rate's from the
decoding steps, a time to first token's from the prefilling ones."""

from __future__ import annotations

from specexp.roofline.costmodel import PassParts

COSTS = (
    "weights_read",
    "matmul_compute",
    "kv_read",
    "attention_compute",
    "all_reduce",
    "drafter",
    "fixed",
)
"""The costs a simulated step's time is split into (PassParts' fields, the drafter, the rest)."""
PHASES = ("decode", "prefill")
"""Steps that only decode (or verify), and steps that prefill a prompt chunk."""


class StepCosts:
    """Seconds of engine time by phase and cost, summed step by step."""

    def __init__(self) -> None:
        self.seconds = {phase: dict.fromkeys(COSTS, 0.0) for phase in PHASES}

    def add(
        self, parts: PassParts, drafter: float, fixed: float, pace: float, prefill: bool
    ) -> None:
        """One step: its target passes' `parts`, the drafter's seconds and the engine's `fixed`
        costs besides the passes', all at the start's `pace`; `prefill`: it took a prompt chunk."""
        s = self.seconds["prefill" if prefill else "decode"]
        for name, value in zip(PassParts._fields, parts, strict=True):
            s[name] += value * pace
        s["drafter"] += drafter * pace
        s["fixed"] += fixed * pace

    def snapshot(self) -> dict[str, dict[str, float]]:
        return {phase: dict(costs) for phase, costs in self.seconds.items()}
