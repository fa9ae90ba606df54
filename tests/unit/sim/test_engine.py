"""specexp.sim (runtime=sim): the simulated engine behind the runtime seam, driven like a real one.

Everything here goes through `SimRuntime` and the workload driver, and reads the same token
events and counters a real server gives."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import Counters, EngineInfo
from specexp.measure.metrics import window_metrics
from specexp.runtimes.base import runtime_for
from specexp.workloads.driver import Window, drive

Spec = Callable[..., Any]


def simulate(
    make_spec: Spec, tmp_path: Path, *overrides: str
) -> tuple[Any, EngineInfo, list[Window]]:
    spec = make_spec(*overrides)
    runtime = runtime_for("sim")(spec, tmp_path)
    info = runtime.start()
    try:
        windows = list(drive(runtime, spec.workload, marker="test"))
    finally:
        runtime.stop()
    return runtime, info, windows


def metrics(window: Window) -> dict[str, Any]:
    return window_metrics(window.traces, window.delta, prefill_only=False)


def test_sim_records_itself_as_simulated(make_spec: Spec, tmp_path: Path) -> None:
    runtime, info, _ = simulate(make_spec, tmp_path, "workload.output_tokens=8")
    assert runtime.source == "simulated"
    assert info.runtime == "sim" and info.version
    assert info.kv_cache_tokens and info.kv_cache_tokens > 0


def test_counters_behave_like_vllms(make_spec: Spec, tmp_path: Path) -> None:
    _, _, [window] = simulate(
        make_spec, tmp_path, "drafter=mtp", "k=3", "workload.output_tokens=300"
    )
    d = window.delta
    [trace] = window.traces
    assert d.drafts and d.drafts > 0
    assert d.draft_tokens == d.drafts * 3
    assert d.accepted_per_position is not None and len(d.accepted_per_position) == 3
    assert d.accepted == sum(d.accepted_per_position)
    first, second, third = d.accepted_per_position
    assert d.drafts >= first >= second >= third >= 0
    # One draft per verify step: every chunk after the prefill token is one step.
    assert d.drafts == len(trace.events) - 1
    assert d.generation_tokens == trace.completion_tokens == 300
    assert trace.completion_tokens <= 1 + d.drafts + d.accepted  # type: ignore[operator]


def test_no_drafter_exposes_no_speculation_counters(make_spec: Spec, tmp_path: Path) -> None:
    _, _, [window] = simulate(make_spec, tmp_path, "drafter=none", "workload.output_tokens=20")
    d = window.delta
    assert d.drafts is None and d.accepted is None and d.accepted_per_position is None
    assert [e.tokens for e in window.traces[0].events] == [1] * 20
    assert metrics(window)["acceptance_rate"] is None


def test_counters_cover_only_the_window(make_spec: Spec, tmp_path: Path) -> None:
    runtime, _, windows = simulate(
        make_spec,
        tmp_path,
        "drafter=mtp",
        "workload.output_tokens=40",
        "workload.repeats=3",
        "workload.warmup=2",
    )
    total = runtime.counters()
    # Warm-up requests are counted by the engine but by no window.
    assert sum(w.delta.generation_tokens for w in windows) == 3 * 40  # type: ignore[misc]
    # warm-ups are warmup_output_tokens (16) long: the workload's two, and the point's one (concurrency 1)
    assert total.generation_tokens == 3 * 40 + (2 + 1) * 16
    assert total.delta(Counters()).drafts == total.drafts


def test_events_are_token_bearing_ordered_and_sum_to_the_completion(
    make_spec: Spec, tmp_path: Path
) -> None:
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "drafter=mtp",
        "k=4",
        "workload.output_tokens=97",
        "workload.concurrency=[3]",
    )
    for trace in windows[0].traces:
        times = [e.t for e in trace.events]
        assert times == sorted(times) and times[0] > trace.sent_at
        assert all(1 <= e.tokens <= 4 + 1 for e in trace.events)
        assert sum(e.tokens for e in trace.events) == trace.completion_tokens == 97
        assert trace.prompt_tokens == 32 and trace.cached_prompt_tokens == 0


def test_more_concurrency_raises_aggregate_and_lowers_per_stream(
    make_spec: Spec, tmp_path: Path
) -> None:
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "drafter=none",
        "workload.output_tokens=64",
        "workload.concurrency=[1,4,16,64]",
    )
    assert [w.point.concurrency for w in windows] == [1, 4, 16, 64]
    agg = [metrics(w)["aggregate_tps"] for w in windows]
    per = [metrics(w)["per_stream_tps"] for w in windows]
    assert agg == sorted(agg) and len(set(agg)) == 4
    assert per == sorted(per, reverse=True) and len(set(per)) == 4


def test_more_concurrency_with_a_drafter(make_spec: Spec, tmp_path: Path) -> None:
    # Acceptance draws add noise between neighbouring levels; 1 vs 64 is far beyond it.
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "drafter=mtp",
        "workload.output_tokens=400",
        "workload.concurrency=[1,64]",
    )
    single, many = (metrics(w) for w in windows)
    assert many["aggregate_tps"] > 10 * single["aggregate_tps"]
    assert many["per_stream_tps"] < 0.8 * single["per_stream_tps"]


def test_same_seed_gives_identical_numbers(make_spec: Spec, tmp_path: Path) -> None:
    args = ("drafter=mtp", "k=8", "workload.output_tokens=200", "seed=5")
    _, _, a = simulate(make_spec, tmp_path, *args)
    _, _, b = simulate(make_spec, tmp_path, *args)
    assert a[0].traces == b[0].traces
    assert a[0].delta == b[0].delta


def test_different_seed_gives_different_acceptance_draws(make_spec: Spec, tmp_path: Path) -> None:
    base = ("drafter=mtp", "k=8", "workload.output_tokens=200")
    _, _, a = simulate(make_spec, tmp_path, *base, "seed=5")
    _, _, b = simulate(make_spec, tmp_path, *base, "seed=6")
    assert a[0].delta.accepted_per_position != b[0].delta.accepted_per_position
    assert [e.tokens for e in a[0].traces[0].events] != [e.tokens for e in b[0].traces[0].events]


def test_speculation_speeds_up_decoding_of_copy_heavy_text(make_spec: Spec, tmp_path: Path) -> None:
    common = ("workload=edit_heavy", "workload.output_tokens=300")
    _, _, [plain] = simulate(make_spec, tmp_path, "drafter=none", *common)
    _, _, [mtp] = simulate(make_spec, tmp_path, "drafter=mtp", *common)
    assert metrics(mtp)["decode_tps"] > 1.5 * metrics(plain)["decode_tps"]
    assert metrics(mtp)["tokens_per_pass"] > 2


def test_higher_acceptance_gives_more_tokens_per_pass(make_spec: Spec, tmp_path: Path) -> None:
    _, _, [fresh] = simulate(
        make_spec,
        tmp_path,
        "drafter=mtp",
        "workload=fresh_generation",
        "workload.output_tokens=400",
    )
    _, _, [copy] = simulate(
        make_spec, tmp_path, "drafter=mtp", "workload=edit_heavy", "workload.output_tokens=400"
    )
    assert metrics(copy)["acceptance_rate"] > metrics(fresh)["acceptance_rate"]
    assert metrics(copy)["tokens_per_pass"] > metrics(fresh)["tokens_per_pass"]


def test_longer_prompts_take_longer_to_prefill(make_spec: Spec, tmp_path: Path) -> None:
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "workload=prefill_sweep",
        "workload.prompt_lengths=[1024,8192,32768]",
        "workload.repeats=1",
    )
    ttft = [window_metrics(w.traces, w.delta, prefill_only=True)["ttft_s"] for w in windows]
    prefill = [window_metrics(w.traces, w.delta, prefill_only=True)["prefill_tps"] for w in windows]
    assert ttft[0] < ttft[1] < ttft[2]
    assert all(p and p > 0 for p in prefill)


def test_warm_prefix_is_served_from_the_cache(make_spec: Spec, tmp_path: Path) -> None:
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "workload=prefix_cache",
        "workload.prompt_lengths=[16000]",
        "workload.repeats=1",
    )
    cold, warm = windows
    assert (cold.point.cache, warm.point.cache) == ("cold", "warm")
    assert cold.traces[0].cached_prompt_tokens == 0
    assert warm.traces[0].cached_prompt_tokens and warm.traces[0].cached_prompt_tokens > 15_000
    assert warm.delta.cached_prompt_tokens == warm.traces[0].cached_prompt_tokens
    assert metrics(warm)["ttft_s"] < metrics(cold)["ttft_s"] / 5


def test_without_prefix_caching_nothing_is_cached(make_spec: Spec, tmp_path: Path) -> None:
    _, _, windows = simulate(
        make_spec,
        tmp_path,
        "workload=prefix_cache",
        "workload.prompt_lengths=[16000]",
        "workload.repeats=1",
        "runtime.prefix_caching=false",
    )
    cold, warm = windows
    assert warm.traces[0].cached_prompt_tokens == 0
    assert metrics(warm)["ttft_s"] == pytest.approx(metrics(cold)["ttft_s"])


def test_windows_follow_each_other_on_the_virtual_clock(make_spec: Spec, tmp_path: Path) -> None:
    _, _, windows = simulate(make_spec, tmp_path, "workload.output_tokens=16", "workload.repeats=3")
    for earlier, later in zip(windows, windows[1:], strict=False):
        assert later.traces[0].sent_at >= earlier.traces[0].last_token_at  # type: ignore[operator]
