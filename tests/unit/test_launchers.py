"""The same sweep through Hydra's submitit launcher (local processes) gives the same records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SWEEP = ["drafter=none,mtp", "k=3", "workload.output_tokens=64", "workload.repeats=2"]


def _records(root: Path) -> dict[str, dict[str, object]]:
    out = {}
    for path in root.glob("*/result.json"):
        r = json.loads(path.read_text())
        out[r["run_id"]] = {
            "status": r["status"],
            "measurements": [(m["conditions"], m["metrics"]) for m in r["measurements"]],
        }
    return out


def _sweep(root: Path, *extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "specexp", "-m", *SWEEP, *extra, f"hydra.sweep.dir={root}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_submitit_local_gives_the_same_records_as_the_default_launcher(tmp_path: Path) -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    _sweep(tmp_path / "basic")
    _sweep(tmp_path / "submitit", "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5")
    basic, submitit = _records(tmp_path / "basic"), _records(tmp_path / "submitit")
    assert len(basic) == 2 and basic == submitit
    assert (tmp_path / "submitit" / "measurements.md").is_file()


def test_the_shipped_slurm_launcher_config_composes() -> None:
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "specexp",
            "hydra/launcher=slurm_gpu",
            "--cfg",
            "hydra",
            "-p",
            "hydra.launcher",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "partition: gpu" in done.stdout and "gpus_per_node: 1" in done.stdout
    assert "SlurmLauncher" in done.stdout
