"""Windows -> measurements: metrics per point, medians over repeats, samples and spread."""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Iterable
from typing import Any

from specexp.measure import slo as slos
from specexp.measure.arrivals import rate_of
from specexp.measure.bill import bill
from specexp.measure.events import Counters, Point, RequestTrace, Window
from specexp.measure.metrics import (
    acceptance_by_position,
    acceptance_rate,
    energy_metrics,
    latency_distributions,
    percentile,
    tokens_per_pass,
    window_metrics,
)
from specexp.measure.reads import read_resolved
from specexp.record.schema import (
    ClientLoad,
    Conditions,
    CounterDeltas,
    Measurement,
    Metrics,
    SampledOutput,
    TaskItem,
)
from specexp.spec.experiment import SloSpec
from specexp.spec.vocabulary import M

POOLED = ("acceptance_rate", "acceptance_by_position", "tokens_per_pass")
"""Acceptance metrics pool the counters of every repeat instead of taking a median."""
CLIENT_BUSY = 0.8
"""A window whose client processes were on CPU this share of its wall time is client-bound."""
CLIENT_LAG_S = 0.010
"""... as is one where a request left this long after the window's start."""
RATE_MARGIN = 0.10
"""An open-loop point whose achieved rate falls short of its scheduled rate by more than this share
did not get its load delivered (`load_delivered: false`)."""
SILENT_TOKENS = 8
"""Tokens a completion may have that decode to no text the client sees: an end-of-sequence token,
thinking tags a reasoning parser strips. Every other token decodes to at least one byte."""


def measurements(
    windows: Iterable[Window],
    run_conditions: Conditions,
    *,
    prefill_only: bool,
    kv_cache_tokens: int | None,
    partial: bool = False,
    slo: SloSpec | None = None,
) -> list[Measurement]:
    """One measurement per point, in the order points were first measured; warm-up windows
    count in none."""
    by_point: dict[Point, list[Window]] = {}
    for window in (w for w in windows if not w.warmup):
        by_point.setdefault(window.point, []).append(window)
    return [
        _billed(
            _with_load(
                _measurement(point, group, run_conditions, prefill_only, kv_cache_tokens, partial),
                group,
                slo,
            ),
            prefill_only,
        )
        for point, group in by_point.items()
    ]


def _billed(m: Measurement, prefill_only: bool) -> Measurement:
    """The measurement with its bill, where the user set a price (specexp.measure.bill)."""
    update = bill(m.conditions, m.metrics, prefill_only=prefill_only)
    if all(v is None for v in update.values()):
        return m
    return m.model_copy(update={"metrics": m.metrics.model_copy(update=update)})


def _measurement(
    point: Point,
    windows: list[Window],
    run: Conditions,
    prefill_only: bool,
    kv_cache_tokens: int | None,
    partial: bool,
) -> Measurement:
    per_window = [
        {
            **window_metrics(w.traces, w.delta, prefill_only=prefill_only),
            **energy_metrics(w.telemetry, w.traces, prefill_only=prefill_only),
        }
        for w in windows
    ]
    scalar_names = [
        n for n, v in per_window[0].items() if not isinstance(v, list) and n not in POOLED
    ]
    samples = {n: [m[n] for m in per_window] for n in scalar_names}
    metrics: dict[str, Any] = {}
    for name, values in samples.items():
        present = [v for v in values if isinstance(v, (int, float))]
        metrics[name] = statistics.median(present) if present else None
    pooled = _sum_deltas([w.delta for w in windows])
    metrics[M.acceptance_rate] = acceptance_rate(pooled)
    metrics[M.acceptance_by_position] = acceptance_by_position(pooled)
    metrics[M.tokens_per_pass] = tokens_per_pass(pooled)
    metrics[M.kv_cache_tokens] = kv_cache_tokens
    scores = [t.score for w in windows for t in w.task_items.values()]
    metrics[M.task_score] = statistics.fmean(scores) if scores else None
    traces = [t for w in windows for t in w.traces]
    metrics.update(latency_distributions(traces, prefill_only=prefill_only))
    prompt_counts = [t.prompt_tokens for t in traces if t.prompt_tokens is not None]
    conditions = run.model_copy(
        update={
            "prompt_tokens": int(statistics.median(prompt_counts))
            if prompt_counts
            else point.prompt_tokens,
            "concurrency": point.concurrency,
            "request_rate": point.request_rate,
            "cache": point.cache,
            "turn": point.turn,
            "send": point.send,
            "category": point.category,
            "eval_items": sum(len(w.task_items) for w in windows) or None,
            "repeats": len(windows),
            "server_starts": len({w.server_start for w in windows}),
        }
    )
    # the pooled acceptance figures keep their per-window samples too, so repeats show a spread
    for name in ("acceptance_rate", "tokens_per_pass"):
        samples[name] = [m.get(name) for m in per_window]
    kept = {n: v for n, v in samples.items() if any(x is not None for x in v)}
    return Measurement(
        conditions=conditions,
        metrics=Metrics(**metrics),
        token_source="client" if any(t.token_source == "client" for t in traces) else "server",
        samples=kept,
        spread={n: _spread(v) for n, v in kept.items() if _spread(v)},
        server_start=[w.server_start for w in windows]
        if any(w.server_start for w in windows)
        else None,
        requests=[t.request_id for t in traces],
        completions={
            t.request_id: hashlib.sha256(t.text.encode(errors="replace")).hexdigest()[:16]
            for t in traces
            if t.text is not None
        },
        tokens_beyond_stream={
            t.request_id: n for t in traces if (n := tokens_beyond_stream(t)) > 0
        },
        counters_went_back=sorted({name for w in windows for name in w.delta.went_back}),
        errors=[t.error for t in traces if t.error],
        engine_timings=None
        if run.source == "simulated"
        else [t.engine_timings for t in traces if t.engine_timings] or None,
        engine_counters=_counters(pooled),
        prefix_cache_reset=_reset(windows),
        partial=partial,
        client=_client(windows),
        telemetry=[w.telemetry or {} for w in windows]  # by window: {} where one had none
        if any(w.telemetry is not None for w in windows)
        else None,
        engine_series=[w.series for w in windows]
        if any(w.series is not None for w in windows)
        else None,
        step_costs=_costs(windows),
        contaminated=_contaminated(windows),
        contamination=[line for w in windows for line in w.compiles or ()],
        compiles_read=sorted(set.intersection(*(set(w.compiles_read) for w in windows)))
        if windows
        else [],
        sampled={
            rid: SampledOutput(prompt=s.prompt, seed=s.seed, tokens=list(s.tokens))
            for w in windows
            for rid, s in w.sampled.items()
        },
        task_items={
            key: TaskItem(score=t.score, target=t.target, response=t.response)
            for w in windows
            for key, t in w.task_items.items()
        },
        task=next((w.task for w in windows if w.task is not None), None),
    )


def tokens_beyond_stream(trace: RequestTrace) -> int:
    """How many more tokens the server's count gives a completion than the client saw: more than
    its token ids, where the server sent them; else more than its text has UTF-8 bytes, plus the
    tokens that decode to nothing (SILENT_TOKENS). 0 when the count is within reach."""
    counted = trace.completion_tokens
    if counted is None or trace.token_source != "server" or trace.text is None:
        return 0
    if trace.token_ids is not None:
        return max(counted - len(trace.token_ids), 0)
    seen = len(trace.text.encode(errors="replace")) + SILENT_TOKENS
    return max(counted - seen, 0)


def _spread(values: list[Any]) -> list[float]:
    """[min, max] of the finite numbers among `values` ([] when there are none)."""
    numbers = [float(x) for x in values if isinstance(x, (int, float)) and math.isfinite(x)]
    return [min(numbers), max(numbers)] if numbers else []


def _costs(windows: list[Window]) -> dict[str, dict[str, float]] | None:
    """The engine's seconds by phase and cost over the timed windows (None where the engine
    cannot say)."""
    known = [w.costs for w in windows if w.costs is not None]
    if not known:
        return None
    return {
        phase: {k: round(sum(c[phase].get(k, 0.0) for c in known), 9) for k in costs}
        for phase, costs in known[0].items()
    }


def _contaminated(windows: list[Window]) -> bool | None:
    """True when the engine compiled during a window; False when its log was read over every window
    and says it did not; None when the log cannot say for some window."""
    if any(w.compiles for w in windows):
        return True
    return None if any(w.compiles is None for w in windows) else False


def _with_load(m: Measurement, windows: list[Window], slo: SloSpec | None) -> Measurement:
    """Open-loop rates (achieved against scheduled, `load_delivered`) and SLO scores of a point."""
    update: dict[str, Any] = {}
    open_loop = [w for w in windows if any(t.due_at is not None for t in w.traces)]
    if open_loop:
        achieved = [rate_of([t.sent_at for t in w.traces]) for w in open_loop]
        scheduled = [
            rate_of([t.due_at for t in w.traces if t.due_at is not None]) for w in open_loop
        ]
        update[M.achieved_rate_rps] = _median(achieved)
        update[M.scheduled_rate_rps] = _median(scheduled)
        pairs = [(a, q) for a, q in zip(achieved, scheduled) if q is not None]
        delivered = (
            all(a is not None and a >= (1 - RATE_MARGIN) * q for a, q in pairs) if pairs else None
        )
    else:
        delivered = None
    met = None
    if slo is not None and slo.active:
        traces = [t for w in windows for t in w.traces]
        update[M.slo_attainment] = slos.attainment(traces, slo)
        update[M.goodput_rps] = _median([slos.goodput(w.traces, slo) for w in windows])
        met = slos.met(traces, slo)
    if not update:
        return m
    metrics = m.metrics.model_copy(update=update)
    return m.model_copy(update={"metrics": metrics, "load_delivered": delivered, "slo_met": met})


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _client(windows: list[Window]) -> ClientLoad | None:
    """`client`: what the measuring client spent, and whether it, not the server, set the pace."""
    stats = [w.client for w in windows if w.client is not None]
    if not stats:
        return None
    lags = sorted(t.send_lag_s for w in windows for t in w.traces if t.send_lag_s is not None)
    busy = max((s.cpu_s / (s.wall_s * s.processes) for s in stats if s.wall_s > 0), default=0.0)
    lag_max = lags[-1] if lags else 0.0
    bulk = sum(not read_resolved(t) for w in windows for t in w.traces if t.error is None)
    return ClientLoad(
        processes=max(s.processes for s in stats),
        cpu_s=round(sum(s.cpu_s for s in stats), 4),
        busy=round(busy, 3),
        send_lag_p99_s=round(percentile(lags, 99), 6) if lags else None,
        send_lag_max_s=round(lag_max, 6),
        bound=busy >= CLIENT_BUSY or lag_max >= CLIENT_LAG_S or bulk > 0,
        bulk_reads=bulk,
    )


def _counters(pooled: Counters) -> CounterDeltas | None:
    if pooled.draft_tokens is None and pooled.accepted is None:
        return None
    per_pos = pooled.accepted_per_position
    return CounterDeltas(
        drafts=pooled.drafts,
        draft_tokens=pooled.draft_tokens,
        accepted=pooled.accepted,
        accepted_per_position=list(per_pos) if per_pos is not None else None,
    )


def _reset(windows: list[Window]) -> bool | None:
    """`prefix_cache_reset`: whether the engine confirmed emptying its cache before every cold window."""
    asked = [w.cache_reset for w in windows if w.cache_reset is not None]
    return all(asked) if asked else None


def _sum_deltas(deltas: list[Counters]) -> Counters:
    def total(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    per_pos: tuple[float | None, ...] | None = None
    lists = [d.accepted_per_position for d in deltas if d.accepted_per_position is not None]
    if lists:
        width = max(len(x) for x in lists)

        def column(i):
            return [x[i] if i < len(x) else None for x in lists]

        per_pos = tuple(None if None in column(i) else sum(column(i)) for i in range(width))
    return Counters(
        drafts=total([d.drafts for d in deltas]),
        draft_tokens=total([d.draft_tokens for d in deltas]),
        accepted=total([d.accepted for d in deltas]),
        accepted_per_position=per_pos,
        cached_prompt_tokens=total([d.cached_prompt_tokens for d in deltas]),
    )
