"""The engine's state while a window runs, read at a fixed interval: a time series beside the
window's requests (`EngineSeries` in the record).

A real server is read by a thread (`PollingSampler`) that asks its metrics endpoint every
`interval_s` seconds on the client's clock (time.perf_counter, the clock request times are
stamped on) and once more as the window ends; the simulator is read by its own scheduler at every
`interval_s` of its virtual clock (`specexp.runtimes.sim`). What a reading holds is engine-neutral
(`EngineState`): running and waiting requests, the KV cache's use, and the counters of
`specexp.measure.events.Counters`. A reading costs the engine an answer and the client a request:
each reading's time is kept (`read_s`), and benchmarks/engine_series_cost.py measures what it moves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

from specexp.measure.events import Counters, RequestTrace
from specexp.record.schema import EngineSeries

MAX_READINGS = 200
"""Readings kept per window: a longer window's are thinned evenly (the first and last always kept),
so that a record stays small whatever the window's length."""
COUNTERS = ("drafts", "draft_tokens", "accepted", "cached_prompt_tokens", "generation_tokens")


@dataclass(frozen=True)
class EngineState:
    """One reading of an engine: what it runs and queues, how full its KV cache is, its counters."""

    running: float | None = None
    waiting: float | None = None
    kv_usage: float | None = None
    counters: Counters = field(default_factory=Counters)


@dataclass
class Readings:
    """A window's readings as they come: (seconds since the window began, state or None)."""

    interval_s: float
    origin: float
    """The window's start on the clock its requests are stamped on."""
    clock: Literal["wall", "simulated"] = "wall"
    most: int = MAX_READINGS
    """Readings kept at most (thinned evenly)."""
    taken: list[tuple[float, EngineState | None]] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)

    def add(self, at: float, state: EngineState | None, cost: float | None = None) -> None:
        self.taken.append((at - self.origin, state))
        if cost is not None and state is not None:
            self.costs.append(cost)

    def series(self, traces: Sequence[RequestTrace]) -> EngineSeries | None:
        """The readings and the window's requests as one record; None without a reading."""
        kept = thin(self.taken, self.most)
        if not kept:
            return None
        states = [s for _, s in kept]

        def column(read: Callable[[EngineState], float | None]) -> list[float | None]:
            return [None if s is None else read(s) for s in states]

        def counter(name: str) -> list[float | None]:
            return [None if s is None else getattr(s.counters, name) for s in states]

        def since(at: float | None) -> float | None:
            return None if at is None else round(at - self.origin, 6)

        return EngineSeries(
            interval_s=self.interval_s,
            clock=self.clock,
            t=[round(t, 6) for t, _ in kept],
            running=column(lambda s: s.running),
            waiting=column(lambda s: s.waiting),
            kv_usage=column(lambda s: s.kv_usage),
            **{name: counter(name) for name in COUNTERS},
            requests=[
                [since(t.sent_at), since(t.first_token_at), since(t.last_token_at)] for t in traces
            ],
            read_s=round(sum(self.costs) / len(self.costs), 6) if self.costs else None,
            failed=sum(1 for _, s in self.taken if s is None),
        )


def thin(
    taken: list[tuple[float, EngineState | None]], most: int
) -> list[tuple[float, EngineState | None]]:
    """At most `most` of `taken`, evenly spaced, the first and the last always among them."""
    if len(taken) <= most:
        return list(taken)
    step = (len(taken) - 1) / (most - 1)
    return [taken[round(i * step)] for i in range(most)]


class SeriesSource(Protocol):
    """What reads an engine's state over a window: the readings it took, once the window is over."""

    def window(self) -> AbstractContextManager[Readings]: ...


class PollingSampler:
    """Reads a real server every `interval_s` seconds while a window runs, in a thread of its own."""

    def __init__(self, read: Callable[[], EngineState | None], interval_s: float) -> None:
        self.read, self.interval_s = read, interval_s

    @contextmanager
    def window(self) -> Iterator[Readings]:
        clock = time.perf_counter
        readings = Readings(self.interval_s, clock())
        done = threading.Event()

        def once() -> None:
            began = clock()
            state = self.read()
            readings.add(began, state, clock() - began)

        def loop() -> None:
            due = readings.origin
            while not done.is_set():
                once()
                due += self.interval_s
                done.wait(max(due - clock(), 0.0))

        thread = threading.Thread(target=loop, name="specexp-engine-series", daemon=True)
        thread.start()
        try:
            yield readings
        finally:
            done.set()
            thread.join()
            once()  # the state as the window ends: the counters' last step


class SteppedSampler:
    """Reads an engine that steps on a virtual clock: after each of its steps, every reading whose
    time has come (`read_at` gives the engine's clock and its state, at most once per interval)."""

    def __init__(
        self,
        read_at: Callable[[], tuple[float, EngineState]],
        interval_s: float,
        attach: Callable[[Callable[[], None] | None], None],
        most: int = MAX_READINGS,
    ) -> None:
        self.read_at, self.interval_s, self.attach, self.most = read_at, interval_s, attach, most

    @contextmanager
    def window(self) -> Iterator[Readings]:
        start, state = self.read_at()
        readings = Readings(self.interval_s, start, clock="simulated", most=self.most)
        readings.add(start, state)
        due = [start + self.interval_s]

        def after_step() -> None:
            now, state = self.read_at()
            if now >= due[0]:
                readings.add(now, state)
                due[0] = now + self.interval_s

        self.attach(after_step)
        try:
            yield readings
        finally:
            self.attach(None)
            now, state = self.read_at()
            if readings.taken[-1][0] < now - start:
                readings.add(now, state)
