"""Fixtures for the checker tests: figures files on disk, and simulated runs recorded by the
real job path (so the records have the real shape)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from checkhelp import SIM_CASES, make_figure

from specexp.check.figures import Figure


@pytest.fixture()
def fig() -> Callable[..., Figure]:
    """`fig("a", quantization="nvfp4", drop=("concurrency",))` -> Figure."""
    return make_figure


@pytest.fixture()
def write_figures(tmp_path: Path) -> Callable[[Any], Path]:
    """Dump `data` (a dict, or raw text) to a figures file and return its path."""

    def write(data: Any, name: str = "figures.yaml") -> Path:
        path = tmp_path / name
        path.write_text(
            data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False),
            encoding="utf-8",
        )
        return path

    return write


@pytest.fixture(scope="session")
def sim_root(tmp_path_factory: pytest.TempPathFactory, make_spec: Callable[..., Any]) -> Path:
    """A sweep folder of simulated runs, written by the real job path."""
    from specexp.run.job import run_job
    from specexp.run.plan import make_cell
    from specexp.runtimes.http import pool

    root = tmp_path_factory.mktemp("sim")
    for name, overrides in SIM_CASES.items():
        cell = make_cell(make_spec(*overrides))
        try:
            run_job(cell, root / name, root, list(overrides), {})
        finally:
            pool.release()
    return root


@pytest.fixture(scope="session")
def sim_results(sim_root: Path) -> list[tuple[Path, dict[str, Any]]]:
    from specexp.record import find_records

    found = find_records([sim_root])
    assert len(found) == len(SIM_CASES) and all(r.status == "ok" for _, r in found)
    return found
