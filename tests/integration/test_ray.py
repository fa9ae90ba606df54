"""Sweeps on a Ray cluster (`hydra/launcher=ray`, hydra-ray-launcher) started on 127.0.0.1 by the
test: simulated jobs and a real llama-server job, each asking Ray for what it needs, their records
merged into one report as with SLURM."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest

from tests.integration.conftest import REPO

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _cluster(gpus: int) -> Iterator[str]:
    """A Ray head on 127.0.0.1 with `gpus` GPUs declared (logical ones on this CPU machine: Ray
    hands each job its own by CUDA_VISIBLE_DEVICES all the same); its address, stopped after."""
    ray = Path(sys.executable).parent / "ray"
    if not ray.is_file():
        pytest.skip("ray is not installed (the test extra installs it)")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    start = [
        str(ray),
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={port}",
        f"--num-cpus={2 + 2 * gpus}",
        f"--num-gpus={gpus}",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    done = subprocess.run(start, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(
            [str(ray), "stop", "--force"], capture_output=True, timeout=120, env=env, check=False
        )


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    with _cluster(gpus=0) as address:
        yield address


def _sweep(address: str, out: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "specexp",
        "-m",
        "hydra/launcher=ray",
        f"+hydra.launcher.ray.init.address={address}",  # specexp leaves the object store to the cluster
        *overrides,
        f"hydra.sweep.dir={out}",
    ]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def _records(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("result.json"))]


def test_simulated_jobs_run_on_ray_and_merge_into_one_report(
    ray_cluster: str, tmp_path: Path
) -> None:
    done = _sweep(ray_cluster, tmp_path, "drafter=mtp,dspark", "k=3", "workload.output_tokens=64")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Ray Launcher is launching" in done.stdout + done.stderr
    records = _records(tmp_path)
    assert sorted(r["conditions"]["drafter"] for r in records) == ["dspark", "mtp", "none"]
    assert all(r["status"] == "ok" for r in records)
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 3
    text = (tmp_path / "measurements.md").read_text()
    assert all(r["run_id"] in text for r in records) and "## Findings" in text


def test_a_llama_server_job_runs_on_ray(
    ray_cluster: str, llama_server: Path, tmp_path: Path
) -> None:
    done = _sweep(
        ray_cluster,
        tmp_path,
        "runtime=llamacpp",
        "model=tiny",
        "quantization=f32",
        "hardware=cpu",
        "runtime.extra_args=[-t,2]",
        "workload.output_tokens=32",
        "drafter=none",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = _records(tmp_path)
    assert record["status"] == "ok" and record["conditions"]["runtime"] == "llamacpp"
    (measured,) = record["measurements"]
    # The engine's own count, not decode_tps: 32 tokens of the tiny model take ~15 ms, and a
    # busy worker may read every chunk in one go (first == last token time: no decode rate).
    assert [t["predicted_n"] for t in measured["engine_timings"]] == [32]
    assert measured["metrics"]["e2e_tps"] > 0 and not measured["errors"]
    assert (
        shutil.which("pgrep") is None
        or not subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout
    )  # the worker stopped its server


@pytest.fixture(scope="module")
def two_gpu_cluster() -> Iterator[str]:
    """A host of two GPUs, as Ray sees it."""
    with _cluster(gpus=2) as address:
        yield address


def test_jobs_of_one_gpu_each_share_two_gpus_two_at_a_time(
    two_gpu_cluster: str, tmp_path: Path
) -> None:
    """Four jobs asking one GPU each on a two-GPU host: Ray runs them on distinct GPUs, never more
    than two at once, and each record says which GPU it had (provenance.visible_gpus)."""
    done = _sweep(
        two_gpu_cluster,
        tmp_path,
        "+hydra.launcher.ray.remote.num_gpus=1",  # what a one-GPU server job asks (job_resources)
        "drafter=none",
        "hardware=h200,h100",
        "model=qwen3-8b,llama-3.1-8b",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = _records(tmp_path)
    assert len(records) == 4 and all(r["status"] == "ok" for r in records)
    gpus = [r["provenance"]["visible_gpus"] for r in records]
    assert set(gpus) == {"0", "1"}, gpus  # each job one GPU, and both used
    spans = [
        (
            datetime.fromisoformat(r["provenance"]["started_at"]),
            datetime.fromisoformat(r["provenance"]["finished_at"]),
        )
        for r in records
    ]
    for start, _ in spans:  # at no job's start were more than two running, the starter included
        assert sum(1 for a, b in spans if a <= start < b) <= 2
    for i, (a, b) in enumerate(spans):  # two jobs at once never shared a GPU
        for j, (c, d) in enumerate(spans):
            if i < j and a < d and c < b:
                assert gpus[i] != gpus[j]
