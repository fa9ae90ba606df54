"""The simulator's engine stepped in real time, with requests arriving while it runs.

The HTTP server's face on `engine.SimEngine`: the same scheduler (`submit` / `step`), its
prefix cache and its counters, with what a server adds around them:

- arrivals: a request that arrives while a step runs is submitted before the next step, as
  in vLLM's scheduler; an idle engine starts its next step at the arrival;
- real time: the simulated clock runs at `speed` x the wall clock (wall seconds = simulated
  seconds / speed, from `t0`); the tokens of a step are delivered when the step ends on the
  wall clock, never earlier;
- lag: when delivery falls more than `max_lag_s` (wall) behind the schedule, the simulated
  clock is moved up to now before the next step, like a real engine whose step ran long
  (counted in `stats.resyncs`);
- prompts: their cache blocks are hashes of the prompt's own token units (prompts.py).

Every delivery is recorded with its simulated time, its intended send time on the server's
clock (`time.perf_counter`) and, once the HTTP layer wrote it, its actual send time.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specexp.measure.events import Counters, EngineInfo
from specexp.sim.engine import SimEngine
from specexp.sim.kvcache import CHAT_TURN_TOKENS
from specexp.sim.sequences import Seq
from specexp.sim.startup import start_engine
from specexp.simserve.tokens import block_hashes
from specexp.spec.experiment import ExperimentSpec

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
            "tokens": self.tokens,
            "completion_tokens": self.completion_tokens,
            "sim_t": self.sim_t,
            "scheduled": self.scheduled,
            "sent": self.sent,
        }


Sink = Callable[["Job", Delivery, bool], bool]
"""Called at each delivery with (job, delivery, final); returns False when the client is gone."""


@dataclass
class Job:
    """One request of the server, and its sequence inside the engine."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    units: tuple[Any, ...]
    """The prompt's token units (prompts.prompt_units), for the prefix cache."""
    sink: Sink
    arrived: float = field(default_factory=time.perf_counter)
    """Server clock when the request (headers and body) had been read."""
    sim_arrived: float = 0.0
    deliveries: list[Delivery] = field(default_factory=list)
    finished: asyncio.Future[None] | None = None
    aborted: bool = False
    seq: Seq | None = None
    chat: bool = False
    """A chat completion (its prompt has a user message), not a plain completion."""

    @property
    def generated(self) -> int:
        return self.deliveries[-1].completion_tokens if self.deliveries else 0

    @property
    def cached_tokens(self) -> int:
        return self.seq.cached if self.seq is not None else 0


@dataclass(frozen=True)
class Held:
    """One step's tokens for one request, waiting to be handed on."""

    job: Job
    tokens: int
    event: int
    """Index of the token event in the request's sequence (its time can still move)."""
    completion: int
    """Tokens generated once these are out."""
    last: bool
    """The request finished with these."""


@dataclass
class Stats:
    """What the engine's own counters do not say."""

    aborted: int = 0
    resyncs: int = 0


class RealTimeEngine:
    """One simulated server, stepped on the wall clock."""

    def __init__(self, spec: ExperimentSpec, speed: float = 1.0, max_lag_s: float = 0.010) -> None:
        if speed <= 0:
            raise ValueError("speed must be > 0")
        self.spec = spec
        self.speed = speed
        self.max_lag_s = max_lag_s
        self.info: EngineInfo
        self.sim: SimEngine
        self.info, self.sim = start_engine(spec)  # raises RuntimeFailure (out of memory, context)
        self.k = self.sim.k
        self.max_model_len = int(
            self.info.details.get("max_model_len")
            or spec.runtime.max_model_len
            or spec.model.max_position_embeddings
        )
        self.block = self.sim.block_tokens
        self.prefix_caching = spec.runtime.prefix_caching
        self.cache_blocks = (self.info.kv_cache_tokens or 0) // self.block
        """The KV cache's capacity in blocks (vLLM's num_gpu_blocks)."""
        self.stats = Stats()
        self.t0 = time.perf_counter()
        self._arrivals: deque[Job] = deque()
        self.jobs: dict[int, Job] = {}
        """Submitted and not yet closed, by id(seq)."""
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
        job.seq = Seq(
            job.request_id,
            job.prompt_tokens,
            job.max_tokens,
            block_hashes(job.units, self.block),
            user_start=CHAT_TURN_TOKENS if job.chat else 0,
        )
        self._arrivals.append(job)
        if self._wakeup is not None:
            self._wakeup.set()
        return job.finished

    @property
    def running(self) -> int:
        return len(self.sim.running)

    @property
    def waiting(self) -> int:
        """Requests the scheduler holds and has not started (vLLM's num_requests_waiting): not those
        still in the front end or that reached the engine during the step under way."""
        return sum(1 for s in self.sim.waiting if s.queued is not None)

    def reset_prefix_cache(self) -> None:
        self.sim.reset_prefix_cache()

    def counters(self) -> Counters:
        return self.sim.counters()

    # -- the loop ----------------------------------------------------------------------
    async def run(self) -> None:
        """Step forever (cancel the task to stop). If a step raises, every waiting request
        gets the exception instead of hanging."""
        try:
            await self._loop()
        except Exception as err:
            for job in [*self._arrivals, *self.jobs.values()]:
                if job.finished is not None and not job.finished.done():
                    job.finished.set_exception(err)
            raise

    async def _loop(self) -> None:
        self._wakeup = asyncio.Event()
        sim = self.sim
        held: list[Held] = []
        """The last step's tokens, where the engine hands a step's tokens on only once the next step
        is launched (the profile's async_output): they leave at the times the next step gives them."""
        while True:
            while self._arrivals:
                job = self._arrivals.popleft()
                assert job.seq is not None
                if job.aborted or not sim.submit(job.seq, job.sim_arrived):
                    self._close(job)
                else:
                    self.jobs[id(job.seq)] = job
            for job in [j for j in self.jobs.values() if j.aborted]:
                assert job.seq is not None
                sim.abort(job.seq)
                self._close(job)
            if not sim.busy:
                held = await self._hand_on(held)  # no step follows: they left when their pass ended
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            now = time.perf_counter()
            if now - self.wall(sim.clock) > self.max_lag_s:
                sim.clock = self.sim_at(now)
                self.stats.resyncs += 1
            step = sim.step()
            held = await self._hand_on(held)  # this step's launch released them
            if step is None:  # the head of the queue waits for KV that nothing running will free
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            finished = {id(seq) for seq in step.finished}
            now_out = [
                Held(
                    self.jobs[id(seq)],
                    tokens,
                    len(seq.events) - 1,
                    seq.generated,
                    id(seq) in finished,
                )
                for seq, tokens in step.emitted
            ]
            if sim.held.enabled:
                held = now_out
            else:
                await _sleep_until(self.wall(sim.clock))
                await self._hand_on(now_out)
            for seq in step.finished:
                done = self.jobs.get(id(seq))
                if done is not None and not any(h.job is done for h in held):
                    self._close(done)

    async def _hand_on(self, out: list[Held]) -> list[Held]:
        """Deliver `out` in order, each at its token event's time (as the engine's trace has it);
        close a job whose last tokens these were. Returns an empty list."""
        for h in sorted(out, key=_event_t):
            sim_t = _event_t(h)
            due = self.wall(sim_t)
            await _sleep_until(due)
            self._deliver(h.job, h.tokens, due, sim_t, h.completion, h.last)
            if h.last:
                self._close(h.job)
        return []

    def _deliver(
        self, job: Job, tokens: int, due: float, sim_t: float, completion: int, last: bool
    ) -> None:
        if job.aborted or not tokens:
            return
        delivery = Delivery(tokens=tokens, completion_tokens=completion, sim_t=sim_t, scheduled=due)
        job.deliveries.append(delivery)
        if not job.sink(job, delivery, last):
            job.aborted = True

    def _close(self, job: Job) -> None:
        if job.seq is not None:
            self.jobs.pop(id(job.seq), None)
        if job.aborted:
            self.stats.aborted += 1
        if job.finished is not None and not job.finished.done():
            job.finished.set_result(None)


def _event_t(h: Held) -> float:
    """The engine time of a held token event, as the engine's trace has it now."""
    seq = h.job.seq
    assert seq is not None
    return seq.events[h.event].t


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
