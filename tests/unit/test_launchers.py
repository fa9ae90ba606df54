"""The same sweep through Hydra's submitit launcher (local processes) gives the same records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def test_each_job_asks_a_cluster_for_what_it_needs(make_spec: Any) -> None:
    from specexp.run.plan import make_cell
    from specexp.run.sweeper import job_resources

    assert job_resources(make_cell(make_spec())) == {"num_cpus": 1, "num_gpus": 0}  # the simulator
    gpu = make_cell(make_spec("runtime=vllm", "hardware=h200"))
    assert job_resources(gpu) == {"num_cpus": 1, "num_gpus": 1}
    cpu = make_cell(make_spec("runtime=llamacpp", "hardware=cpu", "model=tiny", "quantization=f32"))
    assert job_resources(cpu)["num_gpus"] == 0


def test_rays_launcher_gets_runs_of_jobs_with_equal_needs(make_spec: Any) -> None:
    from types import SimpleNamespace

    from specexp.run.plan import make_cell
    from specexp.run.sweeper import _launch_elsewhere

    calls = []

    class FakeRay:
        ray_cfg = SimpleNamespace(remote={"memory": 1})

        def launch(self, batch: list[list[str]], initial_job_idx: int) -> list[str]:
            calls.append((dict(self.ray_cfg.remote), [b[0] for b in batch], initial_job_idx))
            return [b[0] for b in batch]

    cells = [
        make_cell(make_spec(*o))
        for o in (["runtime=vllm", "hardware=h200"], ["runtime=vllm", "hardware=h200"], [])
    ]
    batch = [["a"], ["b"], ["c"]]
    launcher = FakeRay()
    assert _launch_elsewhere(launcher, batch, cells) == ["a", "b", "c"]  # type: ignore[arg-type]
    assert calls == [
        ({"num_cpus": 1, "num_gpus": 1, "memory": 1}, ["a", "b"], 0),
        ({"num_cpus": 1, "num_gpus": 0, "memory": 1}, ["c"], 2),
    ]
    assert launcher.ray_cfg.remote == {"memory": 1}  # the user's settings are left as they were
