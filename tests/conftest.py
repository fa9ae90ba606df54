"""Shared fixtures: compose configs the way the CLI does, build specs, run the CLI.

Every helper here goes through public entry points (Hydra's compose API plus
`specexp.run.compose.to_spec`, or `python -m specexp` in a subprocess), so the tests pin
what a user sees, not how the pieces are wired inside.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

# The 25 condition keys of docs/vocabulary.md section 1, in its order. Copied here (not read from
# the code) so that a key dropped or renamed in specexp fails the tests.
CONDITION_KEYS = (
    "hardware",
    "gpu_count",
    "gpu_shared",
    "gpu_memory_utilization",
    "tensor_parallel",
    "usd_per_gpu_hour",
    "usd_per_kwh",
    "model",
    "quantization",
    "weights",
    "kv_cache_dtype",
    "max_model_len",
    "runtime",
    "runtime_version",
    "drafter",
    "k",
    "drafter_config",
    "draft_model",
    "workload",
    "prompt_tokens",
    "output_tokens",
    "ignore_eos",
    "concurrency",
    "request_rate",
    "cache",
    "turn",
    "send",
    "category",
    "task",
    "eval_items",
    "prompt_text",
    "prefix_caching",
    "thinking",
    "temperature",
    "top_p",
    "repeats",
    "server_starts",
    "source",
)
"""docs/vocabulary.md section 1: the first written 23, plus `max_model_len` and `draft_model`, plus
`turn` and `category` (agentic sessions, dataset files), plus `task`, `eval_items` and `top_p`
(the answer checks), plus `send` (a shared prefix sent several times), plus `usd_per_gpu_hour` and
`usd_per_kwh` (the bill)."""


def compose_config(overrides: Sequence[str] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """(resolved config, Hydra's group choices) for `overrides`, as `python -m specexp` composes them.

    Compositions are cached per session; callers get their own deep copy to mutate.
    """
    return copy.deepcopy(_composed(tuple(overrides)))


@functools.cache
def _composed(overrides: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    from hydra.core.global_hydra import GlobalHydra

    import specexp.run.sweeper  # noqa: F401  (registers hydra/sweeper=specexp)
    from specexp.run.compose import resolved_config

    GlobalHydra.instance().clear()  # whatever another test left initialized
    return resolved_config(overrides)


def spec_from(overrides: Sequence[str] = ()) -> Any:
    """A validated ExperimentSpec for `overrides`."""
    from specexp.run.compose import to_spec

    data, choices = compose_config(overrides)
    return to_spec(data, choices, list(overrides))


@pytest.fixture(scope="session")
def make_spec() -> Callable[..., Any]:
    """`make_spec("drafter=mtp", "k=3")` -> ExperimentSpec."""
    return lambda *overrides: spec_from(overrides)


@pytest.fixture(scope="session")
def compose_cfg() -> Callable[..., tuple[dict[str, Any], dict[str, Any]]]:
    """`compose_cfg("drafter=mtp")` -> (resolved config, choices)."""
    return lambda *overrides: compose_config(overrides)


def run_specexp(
    *args: str,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
    python: str = PYTHON,
    timeout: float = 180,
) -> subprocess.CompletedProcess[str]:
    """`python -m specexp ARGS` in a subprocess; output captured as text."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYDRA_FULL_ERROR")}
    full_env.update(env or {})
    return subprocess.run(
        [python, "-m", "specexp", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_compare(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m specexp.report --compare ARGS` in a subprocess; output captured as text."""
    return subprocess.run(
        [PYTHON, "-m", "specexp.report", "--compare", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="session")
def specexp_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_specexp


def results_under(root: Path) -> list[dict[str, Any]]:
    """Every result.json under `root`, parsed, in path order."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("result.json"))]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


@pytest.fixture(scope="session")
def read_results() -> Callable[[Path], list[dict[str, Any]]]:
    return results_under


@pytest.fixture(scope="session")
def jsonl() -> Callable[[Path], list[dict[str, Any]]]:
    return read_jsonl


@pytest.fixture(scope="session")
def condition_keys() -> tuple[str, ...]:
    return CONDITION_KEYS


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def _no_gpu_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plans made by tests do not depend on the GPUs of the machine they run on: no GPU is known
    (specexp.measure.gpu_identity), as on a machine without NVML. tests/unit/test_gpu_identity.py
    sets the names it needs."""
    from specexp.measure import gpu_identity

    monkeypatch.setattr(gpu_identity, "local_gpu_names", lambda: None)
    monkeypatch.setattr(gpu_identity, "local_gpu_indices", lambda: None)
