"""Keep a started server for the next job of the same server configuration.

The plan orders cells so that jobs one server can serve are adjacent; a sweep then starts each
distinct server configuration once. Whatever is held is stopped when a job needs another
configuration, at the end of the sweep, at exit and on Ctrl-C.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from pathlib import Path

from specexp.measure.events import EngineInfo
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import ExperimentSpec

_held: tuple[str, Runtime, EngineInfo] | None = None


def acquire(
    server_key: str, spec: ExperimentSpec, job_dir: Path, make: Callable[[], Runtime]
) -> tuple[Runtime, EngineInfo, bool]:
    """A started runtime for `server_key`: the held one if it matches, else a new one.

    Returns (runtime, engine info, reused). RuntimeFailure from start() propagates.
    """
    global _held
    if _held is not None and _held[0] == server_key and _held[1].reusable:
        runtime, info = _held[1], _held[2]
        runtime.spec, runtime.job_dir = spec, job_dir
        return runtime, info, True
    release()
    runtime = make()
    try:
        info = runtime.start()
    except BaseException:
        runtime.stop()
        raise
    if runtime.reusable:
        _held = (server_key, runtime, info)
    return runtime, info, False


def discard(runtime: Runtime) -> None:
    """Stop `runtime` and forget it (after a failure, or when it is not reusable)."""
    global _held
    if _held is not None and _held[1] is runtime:
        _held = None
    runtime.stop()


def release() -> None:
    """Stop the held server, if any."""
    global _held
    if _held is not None:
        runtime = _held[1]
        _held = None
        runtime.stop()


atexit.register(release)
