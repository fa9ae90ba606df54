"""The HTTP measurement client: aiohttp on uvloop, streamed OpenAI-compatible responses.

Chosen by measurement (benchmarks/results/client_timing.md): against a server that stamps every
chunk, httpx's client added several times the TTFT error and CPU of aiohttp on uvloop at
concurrency 8 and 64. What the client does to be exact and light:

- Before a window's clock starts, every request body is serialized and one keep-alive connection
  per request is opened and warmed (a GET of the runtime's health path), so no TCP handshake or
  JSON encoding falls inside a TTFT. TTFT's clock starts at `sent_at`: right before the request
  is handed to aiohttp over an idle open connection.
- Per network read the event loop only stamps time.perf_counter and keeps the bytes; SSE lines
  and JSON are parsed after the window (specexp.runtimes.http.stream). An SSE event's arrival is the
  read that completed its `data:` line. No timer is rescheduled per chunk: one watchdog per
  window finds stalled (no byte for stall_s) and overlong (timeout_s) requests. The garbage
  collector is paused while a window runs, so no collection delays a stamp.
- `processes` > 1 spreads a window over that many client processes (spawned; perf_counter is
  CLOCK_MONOTONIC, one clock for every process of the host); they warm their connections, meet
  at a barrier and send together.
- Every window says what the client spent: its CPU seconds, wall seconds and each request's
  send lag (actual send minus the window's start), so a report can tell a client-bound window.
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing as mp
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp  # imported where a window is sent: a runtime's start needs none of it

from specexp.measure.events import Request
from specexp.record.escape import printable
from specexp.runtimes.http.shared_start import BARRIER_S, SharedStart
from specexp.runtimes.http.stream import RawStream, chunk_text, parse_reads, to_trace

__all__ = [
    "ClientWindow",
    "RawStream",
    "chunk_text",
    "send_offsets",
    "stream_all",
    "stream_window",
    "to_trace",
]


@dataclass
class ClientWindow:
    """The raw streams of one window, in request order, and what the client spent on it."""

    raws: list[RawStream]
    started_at: float
    """perf_counter when the window's sending began (the schedule every request was due at)."""
    wall_s: float
    """From the window's start until its last stream ended."""
    cpu_s: float
    """CPU seconds of the client process(es) over the same span (warm-up of connections excluded)."""
    processes: int = 1
    wall_offset: float = field(default=0.0)
    """time.time() - time.perf_counter() at the window's start: wall clock of a perf_counter stamp."""


@dataclass(frozen=True)
class Prepared:
    path: str
    body: bytes


async def _one(
    session: aiohttp.ClientSession,
    base: str,
    req: Prepared,
    raw: RawStream,
    due: float | None = None,
    slots: asyncio.Semaphore | None = None,
) -> None:
    """Send one prepared request (at perf_counter `due`, open-loop, once one of `slots` is free) and
    keep (arrival, bytes) of every read. Never raises for what a server does: HTTP errors and
    dropped connections end up in raw.error_kind / raw.error (hangs and overlong requests are the
    watchdog's)."""
    clock = time.perf_counter
    if due is not None:
        raw.due_at = due
        while (wait := due - clock()) > 0:  # uvloop's timers tick in ms and may fire early
            await asyncio.sleep(wait)
        if slots is not None:
            if slots.locked():
                await slots.acquire()
                raw.free_at = clock()  # it waited for a slot: its lag counts from there
            else:
                await slots.acquire()
            try:
                await _stream(session, base, req, raw)
            finally:
                slots.release()
            return
    await _stream(session, base, req, raw)


async def _stream(session: aiohttp.ClientSession, base: str, req: Prepared, raw: RawStream) -> None:
    import aiohttp

    reads = raw.reads
    clock = time.perf_counter
    url = base + req.path
    try:
        raw.sent_at = clock()
        async with session.post(url, data=req.body) as response:
            raw.status = response.status
            if response.status != 200:
                text = printable((await response.read()).decode("utf-8", errors="replace"))
                raw.fail(_status_kind(response.status), f"HTTP {response.status}: {text[:500]}")
                return
            async for data in response.content.iter_any():
                reads.append((clock(), data))
    except (aiohttp.ClientError, OSError, TimeoutError) as err:
        raw.fail("connection", f"{type(err).__name__}: {err}")


async def _watchdog(
    tasks: list[asyncio.Task[None]], raws: list[RawStream], timeout_s: float, stall_s: float | None
) -> None:
    """One timer for the whole window instead of one per chunk: a request with no byte for
    `stall_s` is stalled, one not complete after `timeout_s` timed out; either is cancelled."""
    stall = stall_s or timeout_s
    interval = max(min(stall, timeout_s) / 20, 0.02)
    while True:
        await asyncio.sleep(interval)
        now = time.perf_counter()
        for task, raw in zip(tasks, raws):
            if task.done() or not raw.sent_at:
                continue
            last = raw.reads[-1][0] if raw.reads else raw.sent_at
            if now - raw.sent_at >= timeout_s:
                raw.fail("timeout", f"no complete response after {timeout_s:g} s")
                task.cancel()
            elif now - last >= stall:
                raw.fail("stalled", f"no byte from the server for {stall:g} s")
                task.cancel()


def _status_kind(status: int) -> str:
    if status == 429:
        return "http_429"
    return "http_5xx" if status >= 500 else "http_4xx"


async def _warm(session: aiohttp.ClientSession, url: str, limit_s: float) -> None:
    import aiohttp

    try:
        async with asyncio.timeout(limit_s), session.get(url) as response:
            await response.read()
    except (aiohttp.ClientError, OSError, TimeoutError):
        pass  # a server that refuses the probe still gets measured, with connect inside the clock


@dataclass(frozen=True)
class Target:
    """Where a window's requests go and how long they may take: the server's base URL, the window's
    timeout, extra headers, the stall limit and the path that warms each connection first."""

    base_url: str
    timeout_s: float
    headers: dict[str, str] | None
    stall_s: float | None
    warm_path: str | None


async def _send(
    target: Target,
    reqs: Sequence[Prepared],
    shared: SharedStart | None = None,
    offsets: Sequence[float] | None = None,
    max_concurrency: int | None = None,
) -> ClientWindow:
    import aiohttp

    base_url, timeout_s, headers = target.base_url, target.timeout_s, target.headers
    stall_s, warm_path = target.stall_s, target.warm_path

    raws = [RawStream(sent_at=0.0) for _ in reqs]
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=max(60.0, stall_s or 0.0))
    # identity: a compressed stream would hold chunks back until a compression block fills
    all_headers = {
        "content-type": "application/json",
        "accept-encoding": "identity",
        **(headers or {}),
    }
    base = base_url.rstrip("/")  # paths append to it as they are (a base URL may carry a path)
    timeout = aiohttp.ClientTimeout(total=None, connect=30.0)
    async with aiohttp.ClientSession(
        connector=connector, headers=all_headers, timeout=timeout
    ) as session:
        if warm_path and reqs:
            await asyncio.gather(
                *(_warm(session, base + warm_path, min(stall_s or 30.0, 30.0)) for _ in reqs)
            )
        shared_at = shared.wait() if shared is not None else None
        offset = time.time() - time.perf_counter()
        collecting = gc.isenabled()
        gc.disable()  # no collector pause delays an arrival stamp (a window makes no reference cycles)
        try:
            cpu, start = (
                time.process_time(),
                shared_at if shared_at is not None else time.perf_counter(),
            )
            if offsets is None:
                tasks = [
                    asyncio.ensure_future(_one(session, base, r, raw)) for r, raw in zip(reqs, raws)
                ]
            else:
                slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
                tasks = [
                    asyncio.ensure_future(_one(session, base, r, raw, start + at, slots))
                    for r, raw, at in zip(reqs, raws, offsets)
                ]
            watchdog = asyncio.ensure_future(_watchdog(tasks, raws, timeout_s, stall_s))
            await asyncio.gather(*tasks, return_exceptions=True)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            watchdog.cancel()
        finally:
            if collecting:
                gc.enable()
    return ClientWindow(raws, start, wall, cpu, 1, offset)


def _run(coro: Any) -> ClientWindow:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def stream_window(
    base_url: str,
    bodies: Sequence[tuple[str, dict[str, Any]]],
    timeout_s: float,
    headers: dict[str, str] | None = None,
    stall_s: float | None = None,
    warm_path: str | None = "/health",
    processes: int = 1,
    offsets: Sequence[float] | None = None,
    max_concurrency: int | None = None,
) -> ClientWindow:
    """Send every (path, body) at once, or open-loop each at its `offsets` second after the
    window's start with at most `max_concurrency` in flight (over warmed connections); the raw
    streams, parsed, in order."""
    reqs = [
        Prepared(path, json.dumps(body, separators=(",", ":")).encode()) for path, body in bodies
    ]
    target = Target(base_url, timeout_s, headers, stall_s, warm_path)
    if processes <= 1 or len(reqs) <= 1:
        window = _run(_send(target, reqs, None, offsets, max_concurrency))
    else:
        window = _spread(target, reqs, min(processes, len(reqs)), offsets, max_concurrency)
    for raw in window.raws:
        parse_reads(raw)
    return window


def _worker(
    index: int,
    target: Target,
    reqs: list[Prepared],
    offsets: list[float] | None,
    cap: int | None,
    shared: SharedStart,
    results: Any,
) -> None:
    try:
        results.put((index, _run(_send(target, reqs, shared, offsets, cap))))
    except BaseException as err:
        results.put((index, f"{type(err).__name__}: {err}"))


def _spread(
    target: Target,
    reqs: list[Prepared],
    processes: int,
    offsets: Sequence[float] | None = None,
    max_concurrency: int | None = None,
) -> ClientWindow:
    """One window over `processes` spawned client processes: request i goes to process i % n (open-loop,
    each process keeps its requests' offsets; a max_concurrency cap is shared out evenly)."""
    ctx = mp.get_context("spawn")
    shared, results = SharedStart(ctx, processes), ctx.Queue()
    parts = [reqs[i::processes] for i in range(processes)]
    cap = max(1, max_concurrency // processes) if max_concurrency else None
    workers = [
        ctx.Process(
            target=_worker,
            args=(
                i,
                target,
                part,
                None if offsets is None else list(offsets[i::processes]),
                cap,
                shared,
                results,
            ),
            daemon=True,
        )
        for i, part in enumerate(parts)
    ]
    for w in workers:
        w.start()
    got: dict[int, ClientWindow | str] = {}
    try:
        shared.release()
    except threading.BrokenBarrierError:
        pass  # a process died before it was ready: its requests are recorded as failed below
    deadline = time.monotonic() + target.timeout_s + BARRIER_S + 60
    try:
        while len(got) < processes:
            try:
                index, value = results.get(timeout=max(deadline - time.monotonic(), 0.1))
            except queue.Empty:
                break
            got[index] = value
    finally:
        for w in workers:
            w.join(5)
            if w.is_alive():
                w.kill()
    raws: list[RawStream] = [RawStream(sent_at=0.0) for _ in reqs]
    done = [v for v in got.values() if isinstance(v, ClientWindow)]
    for i in range(processes):
        value = got.get(i, "the client process did not answer")
        for j, raw in enumerate(value.raws if isinstance(value, ClientWindow) else []):
            raws[i + j * processes] = raw
        if not isinstance(value, ClientWindow):
            for j in range(len(parts[i])):
                raws[i + j * processes].fail("client", f"client process {i} failed: {value}")
    if not done:
        return ClientWindow(
            raws, time.perf_counter(), 0.0, 0.0, processes, time.time() - time.perf_counter()
        )
    start = min(w.started_at for w in done)
    end = max(w.started_at + w.wall_s for w in done)
    return ClientWindow(
        raws, start, end - start, sum(w.cpu_s for w in done), processes, done[0].wall_offset
    )


async def stream_all(
    base_url: str,
    bodies: Sequence[tuple[str, str, dict[str, Any]]],
    timeout_s: float,
    headers: dict[str, str] | None = None,
    stall_s: float | None = None,
) -> list[RawStream]:
    """Send every (path, request id, body) at once on the running loop; the parsed raw streams."""
    reqs = [
        Prepared(path, json.dumps(body, separators=(",", ":")).encode()) for path, _, body in bodies
    ]
    window = await _send(Target(base_url, timeout_s, headers, stall_s, None), reqs)
    for raw in window.raws:
        parse_reads(raw)
    return window.raws


def send_offsets(requests: Sequence[Request]) -> list[float] | None:
    """Open-loop send offsets of a window (None: a closed-loop burst, all at once)."""
    if all(r.send_at is None for r in requests):
        return None
    return [r.send_at or 0.0 for r in requests]
