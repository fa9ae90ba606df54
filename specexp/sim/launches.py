"""When the scheduler forms and launches each step: the engine's CPU side, beside the GPU's passes.

With `async_output` a step's tokens leave the engine only once the next step has been launched: how
long that takes is specexp/sim/passes.py's (StepPasses.launch_s).

With `overlap_schedule` (SGLang's Scheduler.event_loop_overlap) the scheduler also forms the next batch
as soon as it has launched this one and the one before it has finished on the GPU, then processes the
results of the one before: a request that reaches the scheduler while a step is being launched waits for
the step after the next, and a step cannot end before its launch has. Measured on SGLang 0.5.12
(docs/engines.md 2.9, benchmarks/sglang_waves.py): a burst of 16 prompts of 512 tokens splits into
waves of 1, then those handed over within about 15 ms of the first, then the rest.
"""

from __future__ import annotations

from typing import NamedTuple

from specexp.sim.profile import EngineProfile


class Launch(NamedTuple):
    """What launching a step decides."""

    released: float
    """When the step before's held tokens leave (`async_output`)."""
    launched: float
    """When the scheduler has launched this step: the earliest it can end."""


class StepLaunches:
    """The scheduler's clock of one simulated engine: when it formed and launched the last step."""

    def __init__(self, profile: EngineProfile) -> None:
        self.overlap = profile.overlap_schedule
        self._started = 0.0
        """When the last step began on the GPU (the end of the step before it)."""
        self._launched = 0.0
        """When the scheduler had launched the last step."""

    def forms_at(self, clock: float, busy: bool) -> float:
        """When the scheduler forms the step that starts at `clock`: then, unless the engine was busy
        and overlaps its scheduling (once the last step was launched and the one before it done)."""
        if not self.overlap or not busy:
            return clock
        return min(clock, max(self._launched, self._started))

    def launch(self, formed: float, started: float, launch_s: float, waits: bool) -> Launch:
        """A step formed at `formed` begins on the GPU at `started`, built and launched in `launch_s`
        (specexp/sim/passes.py StepPasses.launch_s); one whose launch `waits` on the GPU launches from
        when it begins there, whatever the overlap (its launch ends with its pass)."""
        self._launched = (formed if self.overlap and not waits else started) + launch_s
        self._started = started
        return Launch(max(self._launched, started), self._launched)
