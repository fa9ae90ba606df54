"""Open-loop load on the simulator: arrivals honoured on the virtual clock, rates, SLOs, searches.

Physics and bookkeeping: a request arriving at an idle engine is sent when its schedule says;
light load is delivered as asked; goodput never exceeds the rate requests came at; SLO
attainment does not rise as the rate rises; a search ends between a load that meets the SLO
and one that misses it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.arrivals import schedule
from specexp.measure.measurements import measurements
from specexp.record import Conditions
from specexp.runtimes.base import runtime_for
from specexp.spec.errors import SpecError
from specexp.spec.vocabulary import NAMES
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
BASE = (
    "hardware=h200",
    "model=qwen3-8b",
    "quantization=bf16",
    "workload=concurrency",
    "workload.warmup=0",
    "workload.output_tokens=64",
    "workload.concurrency=[1]",
)
RUN = Conditions(**{n: None for n in NAMES})


def measure(make_spec: Spec, tmp_path: Path, *overrides: str) -> tuple[Any, list[Any], list[Any]]:
    spec = make_spec(*BASE, *overrides)
    runtime = runtime_for("sim")(spec, tmp_path)
    runtime.start()
    windows = list(drive(runtime, spec.workload, marker="t", seed=spec.seed, slo=spec.slo))
    return (
        spec,
        windows,
        measurements(windows, RUN, prefill_only=False, kv_cache_tokens=None, slo=spec.slo),
    )


def test_requests_arrive_on_schedule_and_light_load_is_delivered(
    make_spec: Spec, tmp_path: Path
) -> None:
    spec, [window], [m] = measure(
        make_spec, tmp_path, "workload.request_rate=[0.5]", "workload.num_requests=12"
    )
    offsets = schedule(12, 0.5, "poisson", 1.0, spec.seed)
    start = window.traces[0].sent_at
    # at 0.5 req/s a 64-token answer is long done before the next arrives: each is sent when due
    assert [t.sent_at - start for t in window.traces] == pytest.approx(offsets)
    assert all(t.due_at == pytest.approx(t.sent_at) for t in window.traces)
    assert m.metrics.achieved_rate_rps == pytest.approx(m.metrics.scheduled_rate_rps)
    assert m.load_delivered is True
    assert m.conditions.request_rate == 0.5 and m.conditions.concurrency is None


def test_constant_arrivals_come_at_the_requested_rate(make_spec: Spec, tmp_path: Path) -> None:
    _, _, [m] = measure(
        make_spec,
        tmp_path,
        "workload.request_rate=2",
        "workload.arrival=constant",
        "workload.duration_s=5",
    )
    assert m.metrics.scheduled_rate_rps == pytest.approx(2.0)
    assert m.metrics.achieved_rate_rps == pytest.approx(2.0)
    assert len(m.requests) == 10


def light_load_slo(make_spec: Spec, tmp_path: Path, *overrides: str) -> list[str]:
    """An SLO the lightest load just meets: 1.5 x its worst TTFT and TPOT."""
    _, _, [m] = measure(
        make_spec, tmp_path, *overrides, "workload.request_rate=[0.5]", "workload.num_requests=8"
    )
    return [
        f"slo.ttft_s={1.5 * m.metrics.ttft_p99_s:.6g}",
        f"slo.tpot_s={1.5 * m.metrics.tpot_p99_s:.6g}",
    ]


@pytest.mark.parametrize("drafter", ["none", "eagle3"])
def test_attainment_does_not_rise_and_goodput_stays_under_the_rate(
    make_spec: Spec, tmp_path: Path, drafter: str
) -> None:
    rates = [1, 4, 16, 64, 256]
    slo = light_load_slo(make_spec, tmp_path, f"drafter={drafter}")
    _, _, points = measure(
        make_spec,
        tmp_path,
        f"drafter={drafter}",
        f"workload.request_rate={rates}",
        "workload.num_requests=32",
        *slo,
    )
    attained = [m.metrics.slo_attainment for m in points]
    assert [m.conditions.request_rate for m in points] == rates
    assert all(b <= a for a, b in zip(attained, attained[1:])), attained
    assert attained[0] > attained[-1], "the sweep should reach loads that miss the SLO"
    for m in points:
        assert m.metrics.goodput_rps <= m.metrics.achieved_rate_rps * (1 + 1e-9)
        # the rate asked of this window: its schedule (Poisson draws scatter it around request_rate)
        assert m.metrics.achieved_rate_rps <= m.metrics.scheduled_rate_rps * (1 + 1e-9)
        assert (m.slo_met is True) == (m.metrics.slo_attainment >= 0.99)


def test_a_concurrency_cap_holds_requests_back_and_the_shortfall_is_marked(
    make_spec: Spec, tmp_path: Path
) -> None:
    _, [window], [m] = measure(
        make_spec,
        tmp_path,
        "workload.request_rate=[200]",
        "workload.num_requests=20",
        "workload.max_concurrency=2",
    )
    events = sorted(
        [(t.sent_at, 1) for t in window.traces] + [(t.last_token_at, -1) for t in window.traces]
    )
    inflight, most = 0, 0
    for _, step in events:
        inflight += step
        most = max(most, inflight)
    assert most <= 2
    assert m.conditions.concurrency == 2
    assert m.metrics.achieved_rate_rps < 0.9 * m.metrics.scheduled_rate_rps
    assert m.load_delivered is False


def test_an_infinite_rate_is_a_burst(make_spec: Spec, tmp_path: Path) -> None:
    _, [window], [m] = measure(
        make_spec, tmp_path, "workload.request_rate=[inf]", "workload.num_requests=6"
    )
    assert len({t.sent_at for t in window.traces}) == 1
    assert m.conditions.request_rate is None and m.conditions.concurrency == 6
    assert m.load_delivered is None


def test_the_search_ends_between_a_load_that_meets_the_slo_and_one_that_misses(
    make_spec: Spec, tmp_path: Path
) -> None:
    slo = light_load_slo(make_spec, tmp_path)
    spec, _, points = measure(
        make_spec,
        tmp_path,
        "workload.request_rate=[1,1000]",
        "workload.search=max_rate",
        "workload.search_steps=5",
        "workload.num_requests=32",
        *slo,
        "slo.percentile=90",
    )
    rates = [m.conditions.request_rate for m in points]
    assert rates[:2] == [1, 1000] and len(points) <= 2 + spec.workload.search_steps
    met = sorted((m.conditions.request_rate, m.slo_met) for m in points)
    best = max(r for r, ok in met if ok)
    worst = min(r for r, ok in met if not ok)
    assert best < worst
    # bisection: no measured rate lies between the best that met and the lowest that missed
    assert not [r for r, _ in met if best < r < worst]
    assert all(ok for r, ok in met if r <= best) and not any(ok for r, ok in met if r >= worst)


def test_the_concurrency_search_bisects_integer_levels(make_spec: Spec, tmp_path: Path) -> None:
    slo = light_load_slo(make_spec, tmp_path)
    _, _, points = measure(
        make_spec,
        tmp_path,
        "workload.concurrency=[1,64]",
        "workload.search=max_concurrency",
        *slo,
        "slo.percentile=90",
    )
    levels = [m.conditions.concurrency for m in points]
    assert levels[:2] == [1, 64] and all(isinstance(c, int) for c in levels)
    assert len(levels) == len(set(levels))


@pytest.mark.parametrize(
    ("overrides", "key", "says"),
    [
        (["workload.request_rate=[4]"], "workload", "num_requests"),
        (["workload.request_rate=[-1]", "workload.num_requests=4"], "workload", "> 0"),
        (["workload.arrival=bursty"], "workload.arrival", "poisson"),
        (
            ["workload.search=max_rate", "workload.request_rate=[1,9]", "workload.num_requests=4"],
            "",
            "slo",
        ),
        (["slo.percentile=120"], "slo.percentile", "100"),
    ],
)
def test_bad_open_loop_settings_get_a_one_line_error(
    make_spec: Spec, overrides: list[str], key: str, says: str
) -> None:
    with pytest.raises(SpecError) as err:
        make_spec(*BASE, *overrides)
    text = str(err.value)
    assert "\n" not in text and key in text and says in text
