"""The simulator's engine stepped in real time, with requests arriving while it runs.

`SimEngine.run` takes a whole window at once; a server gets requests one by one. This loop
keeps SimEngine's own forward pass (`SimEngine._step`: every running sequence's verify tokens
plus prefill chunks up to the token budget, drafting, acceptance draws, counters) and adds what
a server needs around it:

- arrivals: a request that arrives while a step runs is scheduled before the next step, as in
  vLLM's scheduler; an idle engine starts its next step at the arrival;
- scheduling: first come, first served, up to max_num_seqs, and (where the engine has a KV
  pool) only while the pool can hold the request whole, prompt + max_tokens + k;
- real time: the simulated clock runs at `speed` x the wall clock (wall seconds = simulated
  seconds / speed, from `t0`); the tokens of a step are delivered when the step ends on the
  wall clock, never earlier;
- lag: when delivery falls more than `max_lag_s` (wall) behind the schedule, the simulated
  clock is moved up to now before the next step, like a real engine whose step ran long
  (counted in `stats.resyncs`);
- prefix caching on the server's own chained blocks (`prompts.BlockCache`, LRU over the KV
  capacity in blocks) instead of the window engine's cache groups; a hybrid model resumes
  only where a state snapshot was kept (every prefill chunk end and a prompt's last block).

Every delivery is recorded with its simulated time, its intended send time on the server's
clock (`time.perf_counter`) and, once the HTTP layer wrote it, its actual send time.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specexp.events import Counters, EngineInfo, Request
from specexp.runtimes.sim import SimRuntime
from specexp.runtimes.sim.engine import SimEngine, _Seq
from specexp.simserve.prompts import BLOCK_TOKENS, BlockCache, block_hashes
from specexp.spec import ExperimentSpec

PRECISE_SLEEP_S = 0.0015
"""The last part of every wait is a blocking `time.sleep` (nanosecond timer) rather than the
event loop's poll timeout, so that steps end close to their schedule."""


@dataclass
class Delivery:
    """Tokens of one request from one step: one streamed chunk."""

    tokens: int
    completion_tokens: int
    """Cumulative generated tokens after this delivery."""
    sim_t: float
    """Simulated seconds since the server started when the step ended."""
    scheduled: float
    """Server clock (time.perf_counter) at which the chunk is due: t0 + sim_t / speed."""
    sent: float | None = None
    """Server clock right before the chunk was written to the socket (None: not streamed)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens, "completion_tokens": self.completion_tokens,
            "sim_t": self.sim_t, "scheduled": self.scheduled, "sent": self.sent,
        }


Sink = Callable[["Job", Delivery, bool], bool]
"""Called at each delivery with (job, delivery, final); returns False when the client is gone."""


@dataclass
class Job:
    """One request inside the engine."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    units: tuple[Any, ...]
    """The prompt's token units (prompts.prompt_units), for the prefix cache."""
    sink: Sink
    arrived: float = field(default_factory=time.perf_counter)
    """Server clock when the request (headers and body) had been read."""
    sim_arrived: float = 0.0
    cached_tokens: int = 0
    deliveries: list[Delivery] = field(default_factory=list)
    finished: asyncio.Future[None] | None = None
    aborted: bool = False
    seq: _Seq | None = None
    held: float = 0.0
    """KV pool bytes reserved while it runs."""
    hashes: list[int] = field(default_factory=list)

    @property
    def generated(self) -> int:
        return self.deliveries[-1].completion_tokens if self.deliveries else 0


@dataclass
class Stats:
    """Counters the window engine does not keep."""

    prefix_queries: int = 0
    prefix_hits: int = 0
    finished: int = 0
    aborted: int = 0
    resyncs: int = 0
    steps: int = 0


class RealTimeEngine:
    """One simulated server, stepped on the wall clock."""

    def __init__(self, spec: ExperimentSpec, speed: float = 1.0, max_lag_s: float = 0.010) -> None:
        if speed <= 0:
            raise ValueError("speed must be > 0")
        self.spec = spec
        self.speed = speed
        self.max_lag_s = max_lag_s
        runtime = SimRuntime(spec, Path("."))
        self.info: EngineInfo = runtime.start()  # raises RuntimeFailure (out of memory, context)
        self.sim: SimEngine = runtime.engine
        self.k = self.sim.k
        self.max_model_len = int(self.info.details.get("max_model_len") or spec.runtime.max_model_len
                                 or spec.model.max_position_embeddings)
        self.block = int(getattr(self.sim, "cache_block_tokens", 0) or BLOCK_TOKENS)
        # Where the engine has them (SimEngine's KV pool and cache layout), they bound admission
        # and say whether the cache serves hits at all and where a hybrid model can resume.
        self._pool = getattr(self.sim, "pool", None)
        self._memory = getattr(self.sim, "memory", None)
        layout = getattr(self.sim, "layout", None)
        self.prefix_caching = spec.runtime.prefix_caching
        self.cache_hits = self.prefix_caching and (layout is None or bool(layout.enabled and layout.hits))
        self._chunk_blocks = 0
        if layout is not None and getattr(layout, "hybrid", False):
            self._chunk_blocks = max(1, int(layout.chunk_tokens) // self.block)
        self.cache = BlockCache((self.info.kv_cache_tokens or 0) // self.block)
        self.stats = Stats()
        self.t0 = time.perf_counter()
        self._arrivals: deque[Job] = deque()
        self.waiting: deque[Job] = deque()
        self.running: list[Job] = []
        self._wakeup: asyncio.Event | None = None

    # -- clocks ------------------------------------------------------------------------
    def wall(self, sim_t: float) -> float:
        return self.t0 + sim_t / self.speed

    def sim_at(self, wall: float) -> float:
        return (wall - self.t0) * self.speed

    # -- requests ----------------------------------------------------------------------
    def submit(self, job: Job) -> asyncio.Future[None]:
        """Queue `job`; the future resolves when its last token was delivered (or it was aborted)."""
        job.finished = asyncio.get_running_loop().create_future()
        job.sim_arrived = self.sim_at(job.arrived)
        job.hashes = block_hashes(job.units, self.block)
        self._arrivals.append(job)
        if self._wakeup is not None:
            self._wakeup.set()
        return job.finished

    def _schedule(self, job: Job) -> bool:
        """Look up `job`'s cached prefix and reserve its KV; False: it has to wait."""
        cached = 0
        if self.cache_hits:
            # At least the prompt's last token is computed, so at most (prompt - 1) // block blocks.
            limit = (job.prompt_tokens - 1) // self.block
            cached = self.cache.match(job.hashes[:limit], snapshots_only=self._chunk_blocks > 0) * self.block
        if self._pool is not None and self._memory is not None:
            need = float(self._memory.need(job.prompt_tokens - cached + job.max_tokens + self.k))
            if not self._pool.reserve(need):
                return False
            job.held = need
        if self.prefix_caching:
            self.stats.prefix_queries += job.prompt_tokens
            self.stats.prefix_hits += cached
        job.cached_tokens = cached
        counts = self.sim.counts
        counts.cached_prompt_tokens += cached
        counts.prompt_tokens += job.prompt_tokens - cached
        request = Request(request_id=job.request_id, prompt="", prompt_tokens=job.prompt_tokens,
                          max_tokens=job.max_tokens)
        job.seq = _Seq(request=request, sent_at=job.sim_arrived, cached=cached, prefilled=cached)
        return True

    def _remember(self, job: Job) -> None:
        """A finished prefill: its whole blocks enter the prefix cache."""
        if not self.prefix_caching:
            return
        snapshots = None
        if self._chunk_blocks:
            n = len(job.hashes)
            snapshots = {i for i in range(self._chunk_blocks, n + 1, self._chunk_blocks)} | {n}
        self.cache.insert(job.hashes, snapshots)

    def reset_prefix_cache(self) -> None:
        self.cache.clear()

    def counters(self) -> Counters:
        return self.sim.counters()

    # -- the loop ----------------------------------------------------------------------
    async def run(self) -> None:
        """Step forever (cancel the task to stop). If a step raises, every waiting request
        gets the exception instead of hanging."""
        try:
            await self._loop()
        except Exception as err:
            for job in [*self._arrivals, *self.waiting, *self.running]:
                if job.finished is not None and not job.finished.done():
                    job.finished.set_exception(err)
            raise

    async def _loop(self) -> None:
        self._wakeup = asyncio.Event()
        sim = self.sim
        while True:
            if self._arrivals and not self.running and not self.waiting:
                # An idle engine starts at the first arrival, not at the next wake-up.
                sim.clock = max(sim.clock, self._arrivals[0].sim_arrived)
            self.waiting.extend(self._arrivals)
            self._arrivals.clear()
            while self.waiting and len(self.running) < sim.max_num_seqs:
                job = self.waiting[0]
                if job.aborted:
                    self.waiting.popleft()
                    self._close(job)
                    continue
                if not self._schedule(job):
                    break  # first come, first served: the head waits for KV
                self.running.append(self.waiting.popleft())
            if not self.running:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            now = time.perf_counter()
            if now - self.wall(sim.clock) > self.max_lag_s:
                sim.clock = self.sim_at(now)
                self.stats.resyncs += 1
            marks = [(job, len(job.seq.events), job.seq.in_prefill) for job in self.running if job.seq]
            sim._step([job.seq for job, _, _ in marks])  # SimEngine's own forward pass
            self.stats.steps += 1
            due = self.wall(sim.clock)
            await _sleep_until(due)
            for job, before, was_prefill in marks:
                self._deliver(job, before, was_prefill, due)
            still = []
            for job in self.running:
                if job.aborted or (job.seq is not None and job.seq.done):
                    self._close(job)
                else:
                    still.append(job)
            self.running = still

    def _deliver(self, job: Job, before: int, was_prefill: bool, due: float) -> None:
        seq = job.seq
        assert seq is not None
        if was_prefill and not seq.in_prefill:
            self._remember(job)
        if job.aborted:
            return
        tokens = sum(event.tokens for event in seq.events[before:])
        if not tokens:
            return
        final = seq.done
        delivery = Delivery(tokens=tokens, completion_tokens=seq.generated, sim_t=seq.events[-1].t, scheduled=due)
        job.deliveries.append(delivery)
        if not job.sink(job, delivery, final):
            job.aborted = True
        elif final:
            self.stats.finished += 1

    def _close(self, job: Job) -> None:
        if self._pool is not None and job.held:
            self._pool.release(job.held)
            job.held = 0.0
        if job.aborted:
            self.stats.aborted += 1
        if job.finished is not None and not job.finished.done():
            job.finished.set_result(None)


async def _sleep_until(deadline: float) -> None:
    """Wait until `deadline` (time.perf_counter), yielding to the loop at least once."""
    delay = deadline - time.perf_counter()
    if delay > PRECISE_SLEEP_S:
        await asyncio.sleep(delay - PRECISE_SLEEP_S)
    else:
        await asyncio.sleep(0)
    rest = deadline - time.perf_counter()
    if rest > 0:
        time.sleep(rest)
