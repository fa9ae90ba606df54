"""Windows -> measurements: metrics per point, medians over repeats, samples and spread."""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterable
from typing import Any

from specexp.events import Counters, Point, Window
from specexp.metrics import acceptance_by_position, acceptance_rate, energy_metrics, tokens_per_pass, window_metrics

POOLED = ("acceptance_rate", "acceptance_by_position", "tokens_per_pass")
"""Acceptance metrics pool the counters of every repeat instead of taking a median."""


def measurements(
    windows: Iterable[Window], run_conditions: dict[str, Any], *, prefill_only: bool, kv_cache_tokens: int | None
) -> list[dict[str, Any]]:
    """One measurement per point, in the order points were first measured."""
    by_point: dict[Point, list[Window]] = {}
    for window in windows:
        by_point.setdefault(window.point, []).append(window)
    return [
        _measurement(point, group, run_conditions, prefill_only, kv_cache_tokens)
        for point, group in by_point.items()
    ]


def _measurement(
    point: Point, windows: list[Window], run: dict[str, Any], prefill_only: bool, kv_cache_tokens: int | None
) -> dict[str, Any]:
    per_window = [{**window_metrics(w.traces, w.delta, prefill_only=prefill_only),
                   **energy_metrics(w.telemetry, w.traces, prefill_only=prefill_only)} for w in windows]
    scalar_names = [n for n, v in per_window[0].items() if not isinstance(v, list) and n not in POOLED]
    samples = {n: [m[n] for m in per_window] for n in scalar_names}
    metrics: dict[str, Any] = {}
    for name, values in samples.items():
        present = [v for v in values if v is not None]
        metrics[name] = statistics.median(present) if present else None
    pooled = _sum_deltas([w.delta for w in windows])
    metrics["acceptance_rate"] = acceptance_rate(pooled)
    metrics["acceptance_by_position"] = acceptance_by_position(pooled)
    metrics["tokens_per_pass"] = tokens_per_pass(pooled)
    metrics["kv_cache_tokens"] = kv_cache_tokens
    metrics["output_identical"] = None
    traces = [t for w in windows for t in w.traces]
    prompt_counts = [t.prompt_tokens for t in traces if t.prompt_tokens is not None]
    conditions = dict(run)
    conditions.update(
        prompt_tokens=int(statistics.median(prompt_counts)) if prompt_counts else point.prompt_tokens,
        concurrency=point.concurrency,
        cache=point.cache,
        repeats=len(windows),
    )
    # the pooled acceptance figures keep their per-window samples too, so repeats show a spread
    for name in ("acceptance_rate", "tokens_per_pass"):
        samples[name] = [m.get(name) for m in per_window]
    kept = {n: v for n, v in samples.items() if any(x is not None for x in v)}
    return {
        "conditions": conditions,
        "metrics": metrics,
        "token_source": "client" if any(t.token_source == "client" for t in traces) else "server",
        "samples": kept,
        "spread": {n: [min(x for x in v if x is not None), max(x for x in v if x is not None)] for n, v in kept.items()},
        "requests": [t.request_id for t in traces],
        "completions": {
            t.request_id: hashlib.sha256(t.text.encode()).hexdigest()[:16] for t in traces if t.text is not None
        },
        "errors": [t.error for t in traces if t.error],
        "engine_timings": [t.engine_timings for t in traces if t.engine_timings] or None,
        "telemetry": [w.telemetry for w in windows] if any(w.telemetry is not None for w in windows) else None,
        **_reset(windows),
    }


def _reset(windows: list[Window]) -> dict[str, Any]:
    """`prefix_cache_reset`: whether the engine confirmed emptying its cache before every cold window."""
    asked = [w.cache_reset for w in windows if w.cache_reset is not None]
    return {"prefix_cache_reset": all(asked)} if asked else {}


def _sum_deltas(deltas: list[Counters]) -> Counters:
    def total(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    per_pos: tuple[float, ...] | None = None
    lists = [d.accepted_per_position for d in deltas if d.accepted_per_position is not None]
    if lists:
        width = max(len(x) for x in lists)
        per_pos = tuple(sum(x[i] for x in lists if i < len(x)) for i in range(width))
    return Counters(
        drafts=total([d.drafts for d in deltas]),
        draft_tokens=total([d.draft_tokens for d in deltas]),
        accepted=total([d.accepted for d in deltas]),
        accepted_per_position=per_pos,
        cached_prompt_tokens=total([d.cached_prompt_tokens for d in deltas]),
    )
