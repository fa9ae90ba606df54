"""SGLang runs a prefill batch alone (docs/engines.md 2.8): while a burst's later prompts prefill, the
sequences already decoding wait, so every request of a burst ends at about the same time; vLLM's steps
carry the decode tokens beside the prompt chunks, and its early requests decode meanwhile."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.profile import load_profile
from specexp.sim.startup import start_engine
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
BURST = (
    "hardware=h200",
    "quantization=bf16",
    "runtime.engine=sglang",
    "workload=concurrency",
    "workload.concurrency=[32]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=128",
    "workload.repeats=1",
)


SHAPES = {
    "dense": ("model=qwen3-8b",),
    "dense-eagle3": ("model=qwen3-8b", "drafter=eagle3", "k=3"),
}
"""The dense shape alone and with EAGLE-3, whose bursts of 32 reach their first tokens in three waves or
more (the hybrid's slower prefill gathers all but its first request into one wave)."""


def token_times(
    make_spec: Spec, tmp_path: Path, prefill_first: bool, shape: tuple[str, ...] = SHAPES["dense"]
) -> list[list[float]]:
    """Each request of a burst of 32: when each of its tokens came, seconds after the burst was sent."""
    spec = make_spec(*BURST, *shape)
    profile = load_profile("sglang", "h200").model_copy(update={"prefill_first": prefill_first})
    runtime = SimRuntime(spec, tmp_path)
    _, runtime.engine = start_engine(spec, profile)
    (window,) = [w for w in drive(runtime, spec.workload, marker="pf") if w.point.concurrency == 32]
    sent = min(t.sent_at for t in window.traces)
    return [[e.t - sent for e in t.token_events] for t in window.traces]


def test_sglangs_profile_runs_a_prefill_batch_alone() -> None:
    assert load_profile("sglang").prefill_first
    assert not load_profile("vllm").prefill_first
    assert not load_profile("llamacpp").prefill_first


def tokens_before_the_last_first_token(requests: list[list[float]]) -> tuple[int, int]:
    """When the burst's last request got its first token: how many requests had theirs, and how many
    token events the burst had received by then."""
    last_first = max(times[0] for times in requests)
    return (
        sum(times[0] < last_first for times in requests),
        sum(t < last_first for times in requests for t in times),
    )


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_bursts_early_requests_decode_nothing_while_its_later_prompts_prefill(
    make_spec: Spec, tmp_path: Path, shape: str
) -> None:
    alone = token_times(make_spec, tmp_path / "alone", True, SHAPES[shape])
    mixed = token_times(make_spec, tmp_path / "mixed", False, SHAPES[shape])
    early, events = tokens_before_the_last_first_token(alone)
    # the burst reaches its first tokens in waves (measured on the H200: in one
    # repeat one at 57 ms, 14 at 204, 17 at 416 ms) ...
    assert 0 < early < len(alone)
    # ... and the early waves get nothing more until the last has prefilled: their first tokens only
    assert events == early
    # with decode tokens beside the prompt chunks (vLLM's steps) the early requests decode meanwhile
    mixed_early, mixed_events = tokens_before_the_last_first_token(mixed)
    assert mixed_events > mixed_early
    if "drafter" in " ".join(SHAPES[shape]):
        return  # a drafter's accepted tokens, drawn a request at a time, end each request in its own time
    # so the burst ends as one (measured: in four of five repeats every request within 8 ms of the others)
    firsts, ends = [times[0] for times in alone], [times[-1] for times in alone]
    assert max(ends) - min(ends) < (max(firsts) - min(firsts)) / 10
