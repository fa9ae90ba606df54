"""One window of requests, and what is read around it: the engine's counters, its log, the GPU.

Every driver sends its windows through `timed` (a measured window) or `warm_up` (one that counts in
no figure). A timed window reads the engine's counters right before and after the requests, so its
acceptance belongs to exactly that window, and the engine's log over it, so that a window in which
the engine compiled a kernel is known (`Window.compiles`): such a window measures the compile, not
the engine, and the closed-loop driver runs it again (specexp.workloads.driver).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import replace

from specexp.measure.events import Counters, Point, Request, Window
from specexp.measure.telemetry import NoTelemetry, NvmlSampler
from specexp.runtimes.base import Runtime
from specexp.runtimes.http.kernel_cache import read_for_compiles
from specexp.spec.experiment import WorkloadSpec


def timed(
    runtime: Runtime,
    requests: Sequence[Request],
    point: Point,
    *,
    repeat: int = 0,
    reset: bool | None = None,
    sampler: NvmlSampler | NoTelemetry | None = None,
) -> Window:
    """Send `requests` at once (or on their schedule) and read the counters, log and GPU around them,
    and the engine's state while they run."""
    mark = runtime.log_mark()
    before, spent = runtime.counters(), runtime.step_costs()
    window = sampler.window() if sampler is not None else nullcontext()
    source = runtime.engine_series(repeat)
    with window as gpu, source.window() if source is not None else nullcontext() as readings:
        traces = runtime.run_window(requests)
    delta = runtime.window_counters(runtime.counters().delta(before), traces)
    after = runtime.step_costs() if spent is not None else None
    return Window(
        point,
        traces,
        delta,
        reset,
        repeat=repeat,
        client=runtime.client_stats(),
        telemetry=gpu.summary if gpu is not None else None,
        compiles=runtime.compiles_since(mark),
        compiles_read=read_for_compiles(mark),
        series=readings.series(traces) if readings is not None else None,
        costs={
            phase: {k: v - spent.get(phase, {}).get(k, 0.0) for k, v in costs.items()}
            for phase, costs in after.items()
        }
        if after is not None and spent is not None
        else None,
    )


def warm_up(runtime: Runtime, requests: Sequence[Request], point: Point, repeat: int = 0) -> Window:
    """Send `requests` that count in no figure (a warm-up, or a cache-priming send)."""
    traces = runtime.run_window(requests)
    return Window(
        point, traces, Counters(), repeat=repeat, warmup=True, client=runtime.client_stats()
    )


def discarded(window: Window) -> Window:
    """`window` kept for the record (requests.jsonl) but counted in no figure: it was run again."""
    return replace(window, warmup=True, discarded="contaminated")


def digest(key: str) -> str:
    """A short, fixed-length stand-in for `key` (12 hex digits of its SHA-256)."""
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def own_prompt_warm_up(workload: WorkloadSpec, marker: str, chat: bool) -> Callable[[int], Request]:
    """The warm-up requests of a workload that sends its own `prompt` (sessions, traces): that prompt
    behind a tag of the request id's digest (the same length whatever the marker; no prefix shared
    between two of them), `warmup_tokens` out."""

    def make(i: int) -> Request:
        rid = f"{marker}-warmup-{i}"
        return Request(
            request_id=rid,
            prompt=f"[{digest(rid)}] {workload.prompt}",
            prompt_tokens=workload.prompt_tokens,
            max_tokens=warmup_tokens(workload),
            ignore_eos=workload.ignore_eos,
            temperature=workload.temperature,
            thinking=workload.thinking,
            warmup=True,
            chat=chat,
        )

    return make


def warmup_tokens(workload: WorkloadSpec) -> int:
    """Output tokens of a warm-up request: `warmup_output_tokens`, never more than the workload's."""
    return min(workload.warmup_output_tokens or workload.output_tokens, workload.output_tokens)


def opening_warm_up(
    runtime: Runtime,
    workload: WorkloadSpec,
    make: Callable[[int], Request],
    tokens: int,
    keep: bool,
) -> Iterator[Window]:
    """The workload's `warmup` requests (`make(i)`) before anything else; the window yielded if `keep`."""
    if workload.warmup:
        window = warm_up(
            runtime,
            [make(i) for i in range(workload.warmup)],
            Point(tokens, workload.warmup, "cold"),
        )
        if keep:
            yield window


def repeats_by_concurrency(workload: WorkloadSpec) -> Iterator[tuple[int, int]]:
    """(concurrency, repeat) in the order every closed-loop driver measures them."""
    return itertools.product(workload.concurrency, range(workload.repeats))
