"""The engine seam: every runtime, the simulator included, is driven through `Runtime`."""

from __future__ import annotations

import importlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast

from specexp.measure.engine_series import SeriesSource
from specexp.measure.events import ClientStats, Counters, EngineInfo, Request, RequestTrace
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.registry import Registry
from specexp.spec.runtime import RuntimeSpec, settings_for

RUNTIMES: Registry[type[Runtime[Any]]] = Registry("runtime")
"""The runtime classes, registered by their modules on import (specexp.spec.runtime names each
module; importing them lazily keeps one runtime's dependencies out of the others' way)."""


R = TypeVar("R", bound="Runtime")
S = TypeVar("S", bound=RuntimeSpec)


def settings_as(spec: ExperimentSpec, cls: type[S]) -> S:
    """The job's runtime settings as the settings model of the engine driving it: a driver reads its
    own keys typed (`runtime_for` only ever gives a driver the settings it registered for)."""
    rt = spec.runtime
    if not isinstance(rt, cls):
        raise TypeError(f"runtime {rt.name!r} is not driven by {cls.__name__}'s runtime")
    return rt


class Runtime(ABC, Generic[S]):
    """One server configuration's life. Timestamps are on the engine's clock. `S`: the settings
    model of the engine it drives (`rt`)."""

    name: ClassVar[str]
    """The runtime's name, from its settings (`register`)."""
    settings: ClassVar[type[RuntimeSpec]]
    source: ClassVar[Literal["measured", "simulated"]]
    reusable: ClassVar[bool] = False
    """A started server may serve the next job of the same server configuration."""
    knows_setup: ClassVar[bool] = True
    """specexp started the server from the spec, so the spec's setup is the server's. False for a
    server that was already running: the setup the user did not state is recorded as unknown."""
    reads_prompts: ClassVar[bool] = True
    """The engine reads the prompt text (False: it goes by each request's token counts and cache
    group alone, as the simulator does, so no prompt text need be built)."""

    def __init__(self, spec: ExperimentSpec, job_dir: Path, server_start: int = 0) -> None:
        self.spec = spec
        self.job_dir = job_dir
        self.server_start = server_start
        """Which of the job's fresh server starts this is (0-based; `workload.server_starts`)."""

    @property
    def log_name(self) -> str:
        """The server log's file in the job's folder: `server.log`, and `server-start-N.log` for
        the N-th start after the first (each start's log whole, read on its own)."""
        return f"server-start-{self.server_start}.log" if self.server_start else "server.log"

    @property
    def rt(self) -> S:
        """This job's runtime settings, as the settings model this runtime registered for."""
        return cast(S, settings_as(self.spec, self.settings))

    @classmethod
    def plan_refusal(cls, spec: ExperimentSpec) -> str | None:
        """Why no server of this runtime could serve `spec`, where it is known before any starts:
        a drafter the engine's version lacks (`RuntimeSpec.drafts_from`), the version being
        `runtime.version` when stated, else what the installed engine says it is. None: nothing
        known against it (a server reached at `runtime.url` is not asked)."""
        rt = spec.runtime
        if spec.drafter.name == "none" or rt.drafts_from is None or getattr(rt, "url", None):
            return None
        return rt.version_refusal(spec.drafter.name, rt.version or cls.installed_version(spec))

    @classmethod
    def installed_version(cls, spec: ExperimentSpec) -> str | None:
        """The version of the engine a job of `spec` would start, read without starting it;
        None where the runtime cannot tell."""
        return None

    @abstractmethod
    def start(self) -> EngineInfo:
        """Start (or reach) the server and wait until it is ready; raise RuntimeFailure."""

    @abstractmethod
    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        """Send `requests` at once, concurrently; return one trace per request, in order."""

    @abstractmethod
    def counters(self) -> Counters:
        """The engine's cumulative counters now."""

    def window_counters(self, delta: Counters, traces: Sequence[RequestTrace]) -> Counters:
        """A window's counter increase, completed from its requests where the engine counts per
        request only (SGLang's speculative counts); `delta` as read, by default."""
        return delta

    def idle(self, seconds: float) -> None:
        """Let `seconds` pass with nothing sent (an agent's think time); the simulator's clock is virtual."""
        if seconds > 0:
            time.sleep(seconds)

    def client_stats(self) -> ClientStats | None:
        """What the measuring client spent on the last window (None: no HTTP client measured it)."""
        return None

    def log_tail(self) -> str:
        """The last lines of the server's log, when specexp started the server."""
        return ""

    def notes(self) -> list[str]:
        """What the runtime could not read (e.g. an unparsable /metrics), for the record."""
        return []

    def log_mark(self) -> object | None:
        """A mark in the engine's log (and kernel cache) before a window (None: this runtime reads
        nothing that shows a compile)."""
        return None

    def compiles_since(self, mark: object | None) -> tuple[str, ...] | None:
        """The lines in which the engine said, since `mark`, that it compiled a kernel while serving,
        and one for each kernel its Triton cache gained (specexp.runtimes.http.kernel_cache): () for
        a clean window, None where neither can say (no log read, or the engine does not report such
        compiles)."""
        return None

    def step_costs(self) -> dict[str, dict[str, float]] | None:
        """What the engine's time has gone to so far, in seconds by phase and cost
        (specexp.sim.costs: the simulator, which knows); None where the engine cannot say."""
        return None

    def engine_series(self, repeat: int = 0) -> SeriesSource | None:
        """What reads the engine's state while a window (of `repeat`) runs, every
        `workload.engine_series_interval_s` (specexp.measure.engine_series); None: the engine has
        no state to read, or the workload asks for none."""
        return None

    def reset_prefix_cache(self) -> bool:
        """Empty the engine's prefix cache; True when the engine confirmed it."""
        return False

    def tokenize(self, text: str) -> list[int] | None:
        """The server's own token ids of `text` (None: this engine cannot say)."""
        return None

    def detokenize(self, tokens: list[int]) -> str | None:
        """Text of `tokens` by the server's tokenizer (None: this engine cannot say)."""
        return None

    def count_prompt(self, request: Request) -> int | None:
        """The prompt tokens the server will count for `request` as it is sent: the chat template
        and its special tokens included (None: this engine cannot say)."""
        return None

    def drafter_config(self) -> str | None:
        """The `drafter_config` condition: the engine's drafter shape where k alone does not say
        it (SGLang's steps/topk/draft-tokens, e.g. "3/1/4"); None: nothing to add."""
        return None

    def server_argv(self) -> list[str] | None:
        """The argv this runtime starts its server with (None: nothing is started)."""
        return None

    @abstractmethod
    def stop(self) -> None:
        """Stop whatever `start` started. Safe to call twice."""


def register(settings: type[RuntimeSpec]) -> Callable[[type[R]], type[R]]:
    """Register a runtime class for the runtime whose settings are `settings` (its name is theirs)."""
    name = settings.model_fields["name"].default

    def add(cls: type[R]) -> type[R]:
        cls.name, cls.settings = name, settings
        RUNTIMES.register(name)(cls)
        return cls

    return add


def runtime_for(name: str) -> type[Runtime[Any]]:
    """The runtime class registered under `name`, importing its module on first use."""
    settings = settings_for(name)
    if name not in RUNTIMES and settings is not None:
        importlib.import_module(settings.module)
    return RUNTIMES.get(name)
