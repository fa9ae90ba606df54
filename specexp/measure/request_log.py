"""requests.jsonl: one line per request of a job, warm-up included, for users and checks.

Each line says which window and repeat the request belonged to, whether it was a warm-up
(counted in no figure), when it was sent, its latencies by specexp.measure.metrics' definitions, the
tokens as the server counted them, its chunks, and how it ended. Keys are documented in
docs/records.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specexp.measure.events import RequestTrace, Window
from specexp.measure.metrics import chunk_gaps, e2e_s, tpot_s, ttft_s
from specexp.measure.reads import reads
from specexp.spec.vocabulary import C, M

REQUESTS_JSONL = "requests.jsonl"
WARM_REACH = 4
"""How much longer than any prompt a job had sent before a point's prompts may be and still count as
warmed at their shape (beyond_warmup)."""


def request_line(
    trace: RequestTrace, window: Window, index: int, chunk_times: bool = False
) -> dict[str, Any]:
    """The record of one request of window number `index` of the job."""
    gaps = chunk_gaps(trace)
    events = trace.token_events
    line: dict[str, Any] = {
        "id": trace.response_id,
        "request_id": trace.request_id,
        "window": index,
        "repeat": window.repeat,
        **({"server_start": window.server_start} if window.server_start else {}),
        "warmup": window.warmup,
        **({"discarded": window.discarded} if window.discarded else {}),
        "prompt_tokens_target": window.point.prompt_tokens,
        "concurrency": window.point.concurrency,
        "cache": window.point.cache,
        **({"turn": window.point.turn} if window.point.turn is not None else {}),
        **({"send": window.point.send} if window.point.send is not None else {}),
        **({"category": window.point.category} if window.point.category is not None else {}),
        "sent_at": trace.sent_wall,
        "send_lag_s": _round(trace.send_lag_s),
        "request_rate": window.point.request_rate,
        "behind_schedule_s": None if trace.due_at is None else _round(trace.sent_at - trace.due_at),
        "ttft_s": _round(ttft_s(trace)),
        "e2e_s": _round(e2e_s(trace)),
        "tpot_s": _round(tpot_s(trace)),
        "output_tokens": trace.completion_tokens,
        "prompt_tokens": trace.prompt_tokens,
        "cached_prompt_tokens": trace.cached_prompt_tokens,
        "token_source": trace.token_source,
        "chunks": len(events),
        "reads": reads(trace),
        "max_chunk_gap_s": _round(max(gaps)) if gaps else None,
        "finish_reason": trace.finish_reason,
        "status": trace.status,
        "error_kind": trace.error_kind,
        "error": trace.error,
    }
    if chunk_times:
        line["chunk_times_s"] = [_round(e.t - trace.sent_at) for e in events]
        line["chunk_tokens"] = [e.tokens for e in events]
    return line


def write_requests(job_dir: Path, windows: Sequence[Window], chunk_times: bool = False) -> Path:
    """Write `job_dir`/requests.jsonl: every request of `windows`, in the order they ran."""
    path = job_dir / REQUESTS_JSONL
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for index, window in enumerate(windows):
            for trace in window.traces:
                handle.write(json.dumps(request_line(trace, window, index, chunk_times)) + "\n")
    return path


def read_requests(job_dir: Path) -> list[dict[str, Any]]:
    """The lines of `job_dir`/requests.jsonl ([] when there is none)."""
    path = job_dir / REQUESTS_JSONL
    if not path.is_file():
        return []
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def by_window(lines: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The job's request lines window by window, in the order the windows ran."""
    windows: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        windows.setdefault(int(line.get("window") or 0), []).append(line)
    return [windows[index] for index in sorted(windows)]


def beyond_warmup(lines: Sequence[dict[str, Any]]) -> set[tuple[str, int | None]]:
    """The (request id, send) of the requests of each timed point's first window that the job's
    earlier requests (`lines`: read_requests) did not warm at its shape: its prompts are more than
    WARM_REACH times longer than
    every request sent before it, or it is the job's first prefill onto a cached prefix (no earlier
    request found most of its prompt cached). A kernel that an engine compiles at a shape's first use,
    without a log line to say so (SGLang's Triton kernels), may have compiled inside that window: its
    figures are not the engine's steady cost. specexp warms each shape before timing it (a prefix timed
    warm: prefix_cache v3; a session's turns); a record written before it did shows here, and so does a
    trace whose requests share prefixes, which is warmed with prompts of its own. The send tells apart
    requests of one prefix's later sends, which records written before specexp gave each send an id of
    its own share."""
    longest, hit = 0, False
    seen: set[tuple[Any, ...]] = set()
    beyond: set[tuple[str, int | None]] = set()
    for reqs in by_window(lines):
        prompts = [int(r.get(C.prompt_tokens) or r.get("prompt_tokens_target") or 0) for r in reqs]
        hits = any(  # most of the prompt found cached (a chat template's first tokens are no hit)
            2 * int(r.get(M.cached_prompt_tokens) or 0) > p
            for r, p in zip(reqs, prompts, strict=True)
        )
        first = reqs[0]
        point = tuple(
            first.get(k) for k in ("prompt_tokens_target", C.concurrency, C.cache, C.turn, C.send)
        )
        if not first.get("warmup") and point not in seen:
            seen.add(point)
            if max(prompts) > WARM_REACH * max(longest, 1) or (hits and not hit):
                beyond |= {(str(r.get("request_id")), r.get(C.send)) for r in reqs}
        longest, hit = max(longest, *prompts), hit or hits
    return beyond


def new_prefill_lengths(lines: Sequence[dict[str, Any]], chunk: int) -> set[tuple[str, int | None]]:
    """The (request id, send) of the timed one-request windows that prefilled a number of tokens no
    earlier request of the job had: their uncached prompt tokens, in steps of at most `chunk` (the
    engine's chunked prefill). An engine that compiles a kernel for each new number of prefill tokens
    without a line in its log (SGLang's hybrid: docs/engines.md 2.5) compiled inside such a window. A
    window of several requests prefills them in steps the record cannot tell apart, and is not named."""
    seen: set[int] = set()
    named: set[tuple[str, int | None]] = set()
    for reqs in by_window(lines):
        steps: set[int] = set()
        for r in reqs:
            new = int(r.get(C.prompt_tokens) or 0) - int(r.get(M.cached_prompt_tokens) or 0)
            steps |= {n for n in (chunk if new >= chunk else 0, new % chunk) if n > 0}
        first, *others = reqs
        if not first.get("warmup") and not others and steps - seen:
            named.add((str(first.get("request_id")), first.get(C.send)))
        seen |= steps
    return named


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 7)
