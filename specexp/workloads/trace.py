"""Trace replay (workload.trace_file): requests sent at their recorded arrival times.

A trace is JSONL, one request a line, in the shape public serving traces use (Mooncake's):
`timestamp` (ms by default, `workload.trace_time_unit`), `input_length`, `output_length` and
optional `hash_ids`, the prefix blocks of `workload.trace_block_tokens` tokens: two requests
whose hash_ids agree on their first n ids share the first n blocks of their prompts. The whole
trace is one window; each request leaves at (timestamp - first timestamp) / trace_speed after the
window's start (`Request.send_at`, honoured by the HTTP client and the simulator alike), and its
send lag behind that time is recorded. The scheduler is this module's `offsets`.
"""

from __future__ import annotations

import hashlib
import statistics
from collections.abc import Iterator
from dataclasses import replace

from specexp.measure.events import Point, Request, RequestTrace, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import WorkloadSpec
from specexp.spec.input_files import TraceRow, load_trace
from specexp.workloads.material import filler, prose
from specexp.workloads.prompts import PromptBuilder
from specexp.workloads.window import (
    digest,
    opening_warm_up,
    own_prompt_warm_up,
    timed,
    warm_up,
    warmup_tokens,
)


def offsets(rows: list[TraceRow], speed: float, unit: str) -> list[float]:
    """Send offsets in seconds from the first arrival, replayed `speed` times faster."""
    scale = 1e-3 if unit == "ms" else 1.0
    first = min(r.timestamp for r in rows)
    return [(r.timestamp - first) * scale / speed for r in rows]


def _chain(hashes: tuple[int, ...], i: int) -> str:
    """The name of prefix block i: it stands for that block and every block before it."""
    return "trace-" + hashlib.sha256(",".join(map(str, hashes[: i + 1])).encode()).hexdigest()[:16]


def short(rid: str, words: int, material: str) -> str:
    """A rest too short to cut with the tokenizer: a few words of the workload's own kind."""
    text = filler(rid, words) if material == "filler" else prose(rid, words)
    return " ".join(text.split()[:words])


def _prompt(row: TraceRow, rid: str, block: int, builder: PromptBuilder | None) -> str:
    """Prompt text: one text per hash id (so shared ids are shared text), then a unique rest."""
    if builder is None:
        return rid
    shared = min(len(row.hash_ids) * block, row.input_length)
    parts = [builder.material(f"trace-block-{h}", block) for h in row.hash_ids[: shared // block]]
    rest = max(row.input_length - shared, 1)
    unique = digest(rid)
    parts.append(
        f"[{unique}] "
        + (
            builder.material(rid, rest)
            if rest > 16
            else short(rid, rest, builder.workload.material)
        )
    )
    return "\n".join(parts)


def _request(
    workload: WorkloadSpec,
    row: TraceRow,
    rid: str,
    block: int,
    builder: PromptBuilder | None,
    chat: bool,
    at: float | None,
    warmup: bool = False,
) -> Request:
    """The request of one trace row, its prefix blocks named by their chains of hash ids."""
    return Request(
        request_id=rid,
        prompt=_prompt(row, rid, block, builder),
        prompt_tokens=row.input_length,
        max_tokens=min(row.output_length, warmup_tokens(workload)) if warmup else row.output_length,
        ignore_eos=workload.ignore_eos,
        temperature=workload.temperature,
        thinking=workload.thinking,
        chat=chat,
        prefix_groups=tuple(
            (_chain(row.hash_ids, j), min((j + 1) * block, row.input_length))
            for j in range(len(row.hash_ids))
        ),
        send_at=at,
        warmup=warmup,
    )


def shares_prefixes(rows: list[TraceRow]) -> bool:
    """Whether some row begins with a prefix block an earlier row sent: the trace has warm hits."""
    seen: set[int] = set()
    for row in rows:
        if row.hash_ids and row.hash_ids[0] in seen:
            return True
        seen.update(row.hash_ids[:1])
    return False


def _shape_warm_up(
    runtime: Runtime,
    workload: WorkloadSpec,
    rows: list[TraceRow],
    marker: str,
    builder: PromptBuilder | None,
    chat: bool,
) -> Iterator[Window]:
    """The trace's shapes before it is timed (workload.warmup_per_point): a prompt as long as its longest,
    on prefix blocks of its own, and, where the trace's requests share prefixes, a second one on the
    same blocks with a rest of its own: the first prefill onto a cached prefix, a shape of its own (an
    engine that compiles a kernel at its first hit does it here, not inside the timed trace)."""
    longest = max(r.input_length for r in rows)
    first_id = max((h for r in rows for h in r.hash_ids), default=0) + 1
    block = workload.trace_block_tokens
    own = TraceRow(
        0.0, longest, warmup_tokens(workload), tuple(range(first_id, first_id + longest // block))
    )
    sends = ["cold", "warm"] if own.hash_ids and shares_prefixes(rows) else ["cold"]
    for nth, cache in enumerate(sends, 1):
        rid = f"{marker}-trace-warmup-send{nth}"
        request = _request(workload, own, rid, block, builder, chat, None, warmup=True)
        yield warm_up(runtime, [request], Point(longest, 1, cache))


def drive_trace(
    runtime: Runtime,
    workload: WorkloadSpec,
    marker: str,
    builder: PromptBuilder | None,
    chat: bool,
    warmups: bool,
) -> Iterator[Window]:
    assert workload.trace_file is not None
    rows = load_trace(workload.trace_file)
    block = workload.trace_block_tokens
    yield from opening_warm_up(
        runtime,
        workload,
        own_prompt_warm_up(workload, marker, chat),
        workload.prompt_tokens,
        warmups,
    )
    if workload.warmup_per_point:
        for window in _shape_warm_up(runtime, workload, rows, marker, builder, chat):
            if warmups:
                yield window
    sends = offsets(rows, workload.trace_speed, workload.trace_time_unit)
    median_input = int(statistics.median(r.input_length for r in rows))
    peak = 0  # the first repeat's measured concurrency names the point every repeat belongs to
    for repeat in range(workload.repeats):
        reqs = [
            _request(workload, row, f"{marker}-trace-r{repeat}-{i}", block, builder, chat, at)
            for i, (row, at) in enumerate(zip(rows, sends))
        ]
        reset = runtime.reset_prefix_cache()
        window = timed(runtime, reqs, Point(median_input, None, "cold"), repeat=repeat, reset=reset)
        peak = peak or peak_in_flight(window.traces)
        yield replace(window, point=Point(median_input, peak, "cold"))


def peak_in_flight(traces: list[RequestTrace]) -> int:
    """Most requests in flight at once (sent, last token not yet received): the measured concurrency."""
    edges = []
    for t in traces:
        end = t.last_token_at if t.last_token_at is not None else t.sent_at
        edges += [(t.sent_at, 1), (end, -1)]
    peak = now = 0
    for _, step in sorted(edges, key=lambda e: (e[0], e[1])):
        now += step
        peak = max(peak, now)
    return max(peak, 1)
