"""One job on the simulator in this process, as a sweep runs it: its measurements and what the
engine said at start (the sim tests' shared way to measure a spec)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from specexp.measure.conditions import run_conditions
from specexp.measure.events import EngineInfo
from specexp.measure.measurements import measurements
from specexp.record.schema import Measurement
from specexp.run.compose import build_spec
from specexp.runtimes.sim.driver import SimRuntime
from specexp.workloads.driver import drive


def simulate(overrides: Sequence[str]) -> tuple[list[Measurement], EngineInfo]:
    """The measurements of a job of `overrides` (warm-up off), and the engine's start facts."""
    spec = build_spec([*overrides, "workload.warmup=0"])
    runtime = SimRuntime(spec, Path(tempfile.mkdtemp()))
    info = runtime.start()
    found = measurements(
        drive(runtime, spec.workload, marker="sim"),
        run_conditions(spec, "simulated"),
        prefill_only=spec.workload.output_tokens == 1,
        kv_cache_tokens=info.kv_cache_tokens,
    )
    return found, info
