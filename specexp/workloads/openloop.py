"""Open-loop load and SLO searches: windows whose requests are sent on a schedule.

`drive_rates` measures every `workload.request_rate` (one point each): `num_requests` (or
rate x `duration_s`) unique requests sent at the offsets `arrivals.schedule` gives, at most
`max_concurrency` in flight. `inf` sends them all at once: a closed-loop burst of that many.
`drive_search` bisects between the lowest and highest rate (or concurrency) given for the
highest load whose requests meet the SLO (specexp.measure.slo.met), in at most `search_steps` steps
after its two bounds; every step is a normal recorded window at its own point.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace

from specexp.measure import slo as slos
from specexp.measure.arrivals import request_count, schedule
from specexp.measure.events import Point, Request, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import SloSpec, WorkloadSpec
from specexp.workloads.window import timed

MakeRequest = Callable[[str, int, "str | None"], Request]


def rate_window(
    runtime: Runtime,
    workload: WorkloadSpec,
    make: MakeRequest,
    tag: str,
    tokens: int,
    rate: float,
    seed: int,
    repeat: int,
) -> Window:
    """One open-loop window at `rate` req/s (inf: a burst)."""
    n = request_count(rate, workload.num_requests, workload.duration_s)
    offsets = schedule(n, rate, workload.arrival, workload.burstiness, seed + repeat)
    burst = math.isinf(rate) and workload.max_concurrency is None
    requests = [
        _scheduled(make(f"{tag}-{i}", tokens, None), None if burst else at)
        for i, at in enumerate(offsets)
    ]
    point = (
        Point(tokens, n, "cold")
        if burst
        else Point(tokens, workload.max_concurrency, "cold", None if math.isinf(rate) else rate)
    )
    return timed(runtime, requests, point, repeat=repeat)


def _scheduled(request: Request, at: float | None) -> Request:
    return replace(request, send_at=at)


def drive_rates(
    runtime: Runtime, workload: WorkloadSpec, make: MakeRequest, marker: str, tokens: int, seed: int
) -> Iterator[Window]:
    for rate in workload.request_rate or ():
        for repeat in range(workload.repeats):
            yield rate_window(
                runtime,
                workload,
                make,
                f"{marker}-p{tokens}-q{rate:g}-r{repeat}",
                tokens,
                rate,
                seed,
                repeat,
            )


def burst_window(
    runtime: Runtime,
    workload: WorkloadSpec,
    make: MakeRequest,
    tag: str,
    tokens: int,
    concurrency: int,
    repeat: int,
) -> Window:
    requests = [make(f"{tag}-{i}", tokens, None) for i in range(concurrency)]
    return timed(runtime, requests, Point(tokens, concurrency, "cold"), repeat=repeat)


def drive_search(
    runtime: Runtime,
    workload: WorkloadSpec,
    make: MakeRequest,
    marker: str,
    tokens: int,
    seed: int,
    slo: SloSpec,
) -> Iterator[Window]:
    """Bisect for the highest load meeting `slo`: measure the low bound, then the high one, then
    midpoints (geometric for rates, integer for concurrency) until `search_steps` or adjacent."""
    by_rate = workload.search == "max_rate"
    loads = workload.request_rate if by_rate else workload.concurrency
    lo, hi = float(min(loads or [1])), float(max(loads or [1]))

    def measure(load: float) -> Iterator[Window]:
        for repeat in range(workload.repeats):
            if by_rate:
                yield rate_window(
                    runtime,
                    workload,
                    make,
                    f"{marker}-p{tokens}-q{load:g}-r{repeat}",
                    tokens,
                    load,
                    seed,
                    repeat,
                )
            else:
                yield burst_window(
                    runtime,
                    workload,
                    make,
                    f"{marker}-p{tokens}-c{int(load)}-r{repeat}",
                    tokens,
                    int(load),
                    repeat,
                )

    def ok(windows: list[Window]) -> bool:
        return slos.met([t for w in windows for t in w.traces], slo)

    low = list(measure(lo))
    yield from low
    if not ok(low):
        return  # even the lowest load misses the SLO
    high = list(measure(hi))
    yield from high
    if ok(high):
        return  # the highest load meets it
    for _ in range(workload.search_steps):
        mid = _midpoint(lo, hi, by_rate)
        if mid is None:
            return
        windows = list(measure(mid))
        yield from windows
        lo, hi = (mid, hi) if ok(windows) else (lo, mid)


def _midpoint(lo: float, hi: float, by_rate: bool) -> float | None:
    if by_rate:
        mid = float(f"{math.sqrt(lo * hi):.3g}")
        return mid if lo < mid < hi else None
    mid = float((int(lo) + int(hi)) // 2)
    return mid if lo < mid < hi else None
