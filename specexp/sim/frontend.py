"""What a request costs before the engine's scheduler can take it: the server's front end.

Every request pays `request_overhead_ms` plus `request_overhead_us_per_token` per prompt token on
its own (HTTP, chat template, tokenisation, block hashing: side by side with the others), then
`request_serial_ms` in a stage that takes one request at a time. That stage either hands each
request to the scheduler as it is done (`each`: llama-server's main loop launching a slot) or hands
over all the requests of one busy spell when the last of them is done (`together`: an event loop that
advances the requests of a burst side by side), or hands over the first of a spell at once and the rest
together when the last is done (`first`: vLLM's API server, whose first request of a burst wakes an idle
engine core that starts a step with it alone, while the others reach the core during that step).
"""

from __future__ import annotations

from typing import Protocol

from specexp.sim.profile import EngineProfile


class Admitted(Protocol):
    ready: float
    """Engine clock from which the scheduler can take it."""


class Frontend:
    """The front end of one simulated server, on the engine's clock."""

    def __init__(self, profile: EngineProfile) -> None:
        self.profile = profile
        self._free = 0.0
        """When the serial stage is free for the next request."""
        self._spell: list[Admitted] = []
        """The requests of the serial stage's current busy spell (release `together` or `first`)."""

    def admit(self, request: Admitted, arrived: float, prompt_tokens: int) -> None:
        """Set `request.ready`: its arrival plus what the front end costs it (and, released `together`,
        move the ready time of the spell's earlier requests with it; released `first`, of all of them
        but the spell's first)."""
        p = self.profile
        request.ready = (
            arrived
            + (p.request_overhead_ms + prompt_tokens * p.request_overhead_us_per_token / 1e3) / 1e3
        )
        if not p.request_serial_ms:
            return
        if request.ready >= self._free:
            self._spell = []  # the serial stage was idle: a new busy spell
        request.ready = self._free = max(request.ready, self._free) + p.request_serial_ms / 1e3
        if p.request_serial_release != "each":
            self._spell.append(request)
            held = self._spell[1:] if p.request_serial_release == "first" else self._spell
            for earlier in held:
                earlier.ready = request.ready
