"""Metric definitions (docs/vocabulary.md section 2) as pure functions.

Each metric is computed from request traces and counter deltas only, by the same code for
simulated and measured runs. Their definitions (units, direction, wording) are specexp.spec.vocabulary.METRICS.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from specexp.measure import reasoning_streams
from specexp.measure.events import Counters, RequestTrace
from specexp.measure.reads import read_resolved
from specexp.measure.ttft_parts import PARTS, ttft_parts
from specexp.spec.vocabulary import METRICS, STATS, M


def ttft_s(trace: RequestTrace) -> float | None:
    first = trace.first_token_at
    return None if first is None else first - trace.sent_at


def decode_tps(trace: RequestTrace) -> float | None:
    n, first, last = trace.completion_tokens, trace.first_token_at, trace.last_token_at
    if n is None or n < 2 or first is None or last is None or last <= first:
        return None
    return (n - 1) / (last - first) if read_resolved(trace) else None


def e2e_tps(trace: RequestTrace) -> float | None:
    n, last = trace.completion_tokens, trace.last_token_at
    if n is None or last is None or last <= trace.sent_at:
        return None
    return n / (last - trace.sent_at)


def tpot_s(trace: RequestTrace) -> float | None:
    n, first, last = trace.completion_tokens, trace.first_token_at, trace.last_token_at
    if n is None or n < 2 or first is None or last is None or not read_resolved(trace):
        return None
    return (last - first) / (n - 1)


def itl_s(trace: RequestTrace) -> float | None:
    """Per chunk: the mean gap between consecutive token-bearing chunks."""
    times = [e.t for e in trace.token_events]
    if len(times) < 2 or not read_resolved(trace):
        return None
    return (times[-1] - times[0]) / (len(times) - 1)


def tokens_per_chunk(trace: RequestTrace) -> float | None:
    """Tokens per gap: what each itl_s gap brought, so itl_s / tokens_per_chunk = tpot_s."""
    events = trace.token_events
    if len(events) < 2 or trace.completion_tokens is None:
        return None
    return (trace.completion_tokens - events[0].tokens) / (len(events) - 1)


def chunk_gaps(trace: RequestTrace) -> list[float]:
    """Every gap between consecutive token-bearing chunks, seconds."""
    times = [e.t for e in trace.token_events]
    return [b - a for a, b in zip(times, times[1:])]


def e2e_s(trace: RequestTrace) -> float | None:
    """Request sent -> last token-bearing chunk."""
    last = trace.last_token_at
    return None if last is None else last - trace.sent_at


def prefill_tps(trace: RequestTrace) -> float | None:
    ttft = ttft_s(trace)
    if ttft is None or ttft <= 0 or trace.prompt_tokens is None:
        return None
    return (trace.prompt_tokens - (trace.cached_prompt_tokens or 0)) / ttft


def aggregate_tps(traces: Sequence[RequestTrace]) -> float | None:
    done = [
        (t.completion_tokens, last)
        for t in traces
        if t.completion_tokens is not None and (last := t.last_token_at) is not None
    ]
    if not done:
        return None
    span = max(last for _, last in done) - min(t.sent_at for t in traces)
    return sum(tokens for tokens, _ in done) / span if span > 0 else None


def per_stream_tps(traces: Sequence[RequestTrace]) -> float | None:
    return _mean([e2e_tps(t) for t in traces])


def acceptance_rate(delta: Counters) -> float | None:
    if not delta.draft_tokens or delta.accepted is None:
        return None
    return delta.accepted / delta.draft_tokens


def acceptance_by_position(delta: Counters) -> list[float | None] | None:
    """Per position; None where the engine did not report the position (unknown, not 0 %)."""
    if not delta.drafts or delta.accepted_per_position is None:
        return None
    drafts = delta.drafts
    return [None if a is None else a / drafts for a in delta.accepted_per_position]


def tokens_per_pass(delta: Counters) -> float | None:
    if not delta.drafts or delta.accepted is None:
        return None
    return 1 + delta.accepted / delta.drafts


PER_REQUEST = {
    M.decode_tps: decode_tps,
    M.e2e_tps: e2e_tps,
    M.ttft_s: ttft_s,
    M.tpot_s: tpot_s,
    M.itl_s: itl_s,
    M.tokens_per_chunk: tokens_per_chunk,
    M.reasoning_tokens: reasoning_streams.reasoning_tokens,
    M.time_to_answer_s: reasoning_streams.time_to_answer_s,
    M.reasoning_tps: reasoning_streams.reasoning_tps,
    M.answer_tps: reasoning_streams.answer_tps,
}
"""The metrics of one request, averaged over a window's requests."""
DECODE_SIDE = tuple(name for name in PER_REQUEST if METRICS[name].family == "decode")
"""Per-request metrics of the decode family: meaningless in a prefill-only window (max_tokens = 1)."""


def window_metrics(
    traces: Sequence[RequestTrace], delta: Counters, *, prefill_only: bool
) -> dict[str, float | list[float | None] | None]:
    """All metrics of one measurement window: requests sent together, counters around them.

    Per-request metrics are averaged over the window's requests. With `prefill_only`
    (max_tokens = 1) decode-side metrics mean nothing and prefill_tps is computed instead.
    """
    ok = [t for t in traces if t.error is None]
    out: dict[str, float | list[float | None] | None] = {}
    for name, fn in PER_REQUEST.items():
        out[name] = _mean([fn(t) for t in ok])
    parts = [ttft_parts(ttft_s(t), t.engine_timings) for t in ok]
    for name in PARTS:
        out[name] = _mean([p[name] for p in parts])
    out[M.aggregate_tps] = aggregate_tps(ok)
    out[M.per_stream_tps] = per_stream_tps(ok)
    cached = [t.cached_prompt_tokens for t in ok if t.cached_prompt_tokens is not None]
    out[M.cached_prompt_tokens] = float(sum(cached)) if cached else delta.cached_prompt_tokens
    if prefill_only:
        out[M.prefill_tps] = _mean([prefill_tps(t) for t in ok])
        for name in DECODE_SIDE:
            out[name] = None
    out[M.acceptance_rate] = acceptance_rate(delta)
    out[M.acceptance_by_position] = acceptance_by_position(delta)
    out[M.tokens_per_pass] = tokens_per_pass(delta)
    return out


def latency_distributions(
    traces: Sequence[RequestTrace], *, prefill_only: bool
) -> dict[str, float | None]:
    """p50 / p90 / p99 / mean of TTFT, TPOT, chunk gap and e2e over `traces` (failed ones left
    out); with `prefill_only` the decode-side ones are None."""
    ok = [t for t in traces if t.error is None]
    values: dict[str, list[float]] = {
        "ttft": [v for v in map(ttft_s, ok) if v is not None],
        "tpot": [] if prefill_only else [v for v in map(tpot_s, ok) if v is not None],
        "chunk_gap": []
        if prefill_only
        else [g for t in ok if read_resolved(t) for g in chunk_gaps(t)],
        "e2e": [v for v in map(e2e_s, ok) if v is not None],
    }
    out: dict[str, float | None] = {}
    for key, xs in values.items():
        ordered = sorted(xs)
        for stat in STATS:
            out[f"{key}_{stat}_s"] = (
                None
                if not ordered
                else statistics.fmean(ordered)
                if stat == "mean"
                else percentile(ordered, float(stat[1:]))
            )
    return out


def percentile(ordered: Sequence[float], q: float) -> float:
    """The q-th percentile of sorted values, linear between closest ranks (numpy's default)."""
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def energy_metrics(
    telemetry: Mapping[str, Any] | None, traces: Sequence[RequestTrace], *, prefill_only: bool
) -> dict[str, float | None]:
    """mean_power_w and energy_j_per_token of one window from its GPU telemetry (None: unknown)."""
    energy = telemetry.get("energy_j") if telemetry else None
    power = telemetry.get(M.mean_power_w) if telemetry else None
    ok = [t for t in traces if t.error is None]
    if prefill_only:
        tokens = sum((t.prompt_tokens or 0) - (t.cached_prompt_tokens or 0) for t in ok)
    else:
        tokens = sum(t.completion_tokens or 0 for t in ok)
    per_token = energy / tokens if energy is not None and tokens > 0 else None
    return {"mean_power_w": power, "energy_j_per_token": per_token}


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None
