"""A window's speculative counts on SGLang, summed from its requests' own (docs/engines.md 2.3, 6).

SGLang counts per request, in the scheduler (`scheduler_output_processor_mixin.py`,
`speculative/eagle_info.py`, `ngram_info.py`), and reports on the finished request's `meta_info`:

- `spec_verify_ct`: verify passes (one draft each), not counting the pass that finished the request;
- `spec_num_correct_drafts`: draft tokens the target accepted over those passes;
- `spec_num_proposed_drafts` = `spec_verify_ct x (speculative_num_draft_tokens - 1)`: tokens drafted;
- `spec_correct_drafts_histogram[i]`: the passes that accepted exactly i drafts.

So over a window, drafts = sum of verify passes, draft_tokens = sum proposed, accepted = sum correct,
and from the histogram of a chain (topk 1) the drafts whose position i was accepted are the passes
that accepted at least i + 1. SGLang adds the fields only when `spec_verify_ct` > 0
(`tokenizer_manager.py` `_calculate_spec_decoding_metrics`): a request whose finished `meta_info` is
there (its `e2e_latency`) but without them counted no pass (one that ended within its first verify
pass, or generated one token) and counts zero. A request without its finished `meta_info` (a chat
stream on 0.5.12) leaves the window's counts unknown (None), never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from specexp.measure.events import Counters, RequestTrace

FIELDS = ("spec_verify_ct", "spec_num_correct_drafts", "spec_num_proposed_drafts")
HISTOGRAM = "spec_correct_drafts_histogram"
FINISHED = "e2e_latency"
"""A key only a finished request's `meta_info` has (`tokenizer_manager.py`)."""


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def request_counts(trace: RequestTrace) -> tuple[int, int, int, list[int]] | None:
    """(verify passes, accepted, proposed, histogram) of one finished request; None when unknown."""
    timings = trace.engine_timings or {}
    counts = [_count(timings.get(f)) for f in FIELDS]
    if any(c is None for c in counts):
        if any(f in timings for f in FIELDS):
            return None  # some counts, not all: not SGLang's answer
        if FINISHED in timings or (trace.completion_tokens or 0) <= 1:
            return 0, 0, 0, []
        return None
    raw = timings.get(HISTOGRAM)
    histogram = [_count(v) for v in raw] if isinstance(raw, list) else []
    verify, correct, proposed = (int(c or 0) for c in counts)
    return verify, correct, proposed, [int(h or 0) for h in histogram]


def window_counts(delta: Counters, traces: Sequence[RequestTrace], k: int | None) -> Counters:
    """`delta` with drafts, draft_tokens, accepted and accepted_per_position from the requests' own
    counts, where the engine's counters gave none (SGLang before 0.5.2x has no speculative counter)."""
    if delta.drafts is not None:
        return delta
    ok = [t for t in traces if t.error is None]
    per_request = [request_counts(t) for t in ok]
    if not ok or any(c is None for c in per_request):
        return delta
    known = [c for c in per_request if c is not None]
    drafts = sum(c[0] for c in known)
    accepted = sum(c[1] for c in known)
    proposed = sum(c[2] for c in known)
    width = max([k or 0, *(len(c[3]) - 1 for c in known)])
    histogram = [sum(c[3][i] for c in known if i < len(c[3])) for i in range(width + 1)]
    by_position: tuple[float | None, ...] | None = None
    if width and sum(histogram) == drafts:
        by_position = tuple(float(sum(histogram[i + 1 :])) for i in range(width))
    return replace(
        delta,
        drafts=float(drafts),
        draft_tokens=float(proposed),
        accepted=float(accepted),
        accepted_per_position=by_position,
    )
