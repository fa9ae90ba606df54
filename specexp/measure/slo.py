"""Latency objectives: which requests meet an SLO, the share that do, and goodput.

A request meets the SLO when it finished without error and its TTFT, TPOT and e2e latency are
each at most the objective set for it (objectives left null are not checked). A load meets
the SLO when at least `percentile` % of its requests do.
"""

from __future__ import annotations

from collections.abc import Sequence

from specexp.measure.arrivals import rate_of
from specexp.measure.events import RequestTrace
from specexp.measure.metrics import e2e_s, tpot_s, ttft_s
from specexp.spec.experiment import SloSpec


def meets(trace: RequestTrace, slo: SloSpec) -> bool:
    if trace.error is not None or trace.first_token_at is None:
        return False
    for limit, fn in ((slo.ttft_s, ttft_s), (slo.tpot_s, tpot_s), (slo.e2e_s, e2e_s)):
        if limit is None:
            continue
        value = fn(trace)
        if fn is tpot_s and value is None and (trace.completion_tokens or 0) < 2:
            continue  # a one-token answer has no TPOT to miss
        if value is None or value > limit:
            return False
    return True


def attainment(traces: Sequence[RequestTrace], slo: SloSpec) -> float | None:
    """Share of `traces` meeting every objective (None: no SLO set, or no request)."""
    if not slo.active or not traces:
        return None
    return sum(meets(t, slo) for t in traces) / len(traces)


def goodput(traces: Sequence[RequestTrace], slo: SloSpec) -> float | None:
    """Requests meeting every objective per second. Open-loop (requests with a schedule): the share
    that met it times the rate they were sent at, so goodput never exceeds the load delivered; a
    closed-loop burst: those requests over the window, first send -> last token of any."""
    share = attainment(traces, slo)
    if share is None:
        return None
    if any(t.due_at is not None for t in traces):
        rate = rate_of([t.sent_at for t in traces])
        return None if rate is None else share * rate
    ends = [t.last_token_at for t in traces if t.last_token_at is not None]
    if not ends:
        return 0.0
    span = max(ends) - min(t.sent_at for t in traces)
    return sum(meets(t, slo) for t in traces) / span if span > 0 else None


def met(traces: Sequence[RequestTrace], slo: SloSpec) -> bool:
    """Whether a load meets the SLO: at least `percentile` % of its requests meet every objective."""
    share = attainment(traces, slo)
    return share is not None and share >= slo.percentile / 100 - 1e-12
