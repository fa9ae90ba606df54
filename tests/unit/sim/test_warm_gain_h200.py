"""The warm-prefix gain on a hybrid model, against what specexp measured of vLLM 0.26 on an H200
(docs/studies.md, "What specexp measured against them"): the Qwen3.8-27B shape in BF16, a prefix sent
cold, then again with a new suffix of ~95 tokens, warm. The simulator prices what a warm hit still
costs (the uncached tail, the aligned state it resumes from, the step and the first token) and
resumes where vLLM's align mode kept a state: each gain within 30 % of the measured one, MTP's
collapse at 8,020 tokens (its hit drops a block and finds no state) included."""

from __future__ import annotations

import pytest

from tests.unit.sim.simulated import simulate

LENGTHS = (3720, 8020, 16020)
MEASURED = {  # cold TTFT / warm TTFT, docs/studies.md (runs 67d29f539034, 16ead46f80e4)
    "none": (0.3429 / 0.09892, 0.691 / 0.07097, 1.435 / 0.09592),
    "mtp": (0.3455 / 0.1346, 0.721 / 0.7612, 1.481 / 0.7779),
}
CACHED = {"none": (3136, 7840, 15680), "mtp": (2400, 0, 8000)}
"""Prompt tokens the warm request found cached, as vLLM reported them (docs/engines.md 1.7)."""


def gains(drafter: str) -> tuple[list[float], list[float]]:
    found, _ = simulate(
        [
            "hardware=h200",
            "model=qwen3.8-27b",
            "quantization=bf16",
            f"drafter={drafter}",
            *(["k=3"] if drafter == "mtp" else []),
            "workload=prefix_cache",
            f"workload.prompt_lengths=[{','.join(map(str, LENGTHS))}]",
            "workload.suffix_tokens=95",  # the warm prompt's own tail, as specexp's prompts had it there
            "workload.repeats=1",
            "runtime.max_model_len=32768",
        ]
    )
    ttft: dict[tuple[int, str], float] = {}
    cached: dict[int, float] = {}
    for m in found:
        length = int(m.conditions.prompt_tokens or 0)
        ttft[(length, str(m.conditions.cache))] = float(m.metrics.ttft_s or 0)
        if m.conditions.cache == "warm":
            cached[length] = float(m.metrics.cached_prompt_tokens or 0)
    return (
        [ttft[(n, "cold")] / ttft[(n, "warm")] for n in LENGTHS],
        [cached[n] for n in LENGTHS],
    )


@pytest.mark.parametrize("drafter", ["none", "mtp"])
def test_the_warm_gain_on_a_hybrid_is_vllms_within_30_percent(drafter: str) -> None:
    simulated, cached = gains(drafter)
    assert cached == list(CACHED[drafter])  # the states vLLM's align mode resumed from
    for sim, measured in zip(simulated, MEASURED[drafter], strict=True):
        assert sim == pytest.approx(measured, rel=0.30), (simulated, MEASURED[drafter])
