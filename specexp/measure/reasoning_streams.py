"""A reasoning model's two streams, per request (docs/vocabulary.md, "Thinking"): the tokens it
reasons with before it answers, the time to its first answer token, and the decode rate of each
stream. The stream's own split (specexp.runtimes.http.reasoning, or the simulator's) marks each
token event as reasoning or answer. All four are None for a request that did not reason: its
ttft_s and decode_tps say it all."""

from __future__ import annotations

from specexp.measure.events import RequestTrace, TokenEvent
from specexp.measure.reads import read_resolved


def _rate(events: list[TokenEvent]) -> float | None:
    """(tokens - 1) / (last - first) of a stream's events, as decode_tps is of a request's."""
    if len(events) < 2:
        return None
    span = events[-1].t - events[0].t
    tokens = sum(e.tokens for e in events)
    return (tokens - 1) / span if span > 0 and tokens > 1 else None


def _reasoned(trace: RequestTrace) -> bool:
    return any(e.reasoning for e in trace.token_events)


def reasoning_tokens(trace: RequestTrace) -> float | None:
    if not _reasoned(trace):
        return None
    return float(sum(e.tokens for e in trace.token_events if e.reasoning))


def time_to_answer_s(trace: RequestTrace) -> float | None:
    if not _reasoned(trace):
        return None
    first = next((e.t for e in trace.token_events if not e.reasoning), None)
    return None if first is None else first - trace.sent_at


def reasoning_tps(trace: RequestTrace) -> float | None:
    if not read_resolved(trace):  # the client read the stream's ends in bulk, as for decode_tps
        return None
    return _rate([e for e in trace.token_events if e.reasoning])


def answer_tps(trace: RequestTrace) -> float | None:
    if not _reasoned(trace) or not read_resolved(trace):
        return None
    return _rate([e for e in trace.token_events if not e.reasoning])
