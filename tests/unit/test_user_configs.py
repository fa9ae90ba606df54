"""A user's own config directory (`--config-dir DIR`, `hydra.searchpath=[file://DIR]`): a GPU, a
model and a workload specexp does not ship, composed, validated, suggested and listed beside the
shipped ones, from a directory outside the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my-configs"
CELL = [
    "hardware=rtx4090",
    "model=mistral-7b-v0.3",
    "workload=support_chat",
    "runtime.max_model_len=16384",
]


def _specexp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specexp", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    shutil.copytree(EXAMPLE, home / "my-configs")
    return home / "my-configs"


def _record(folder: Path) -> dict:
    (path,) = folder.rglob("result.json")
    return json.loads(path.read_text())


def test_a_users_gpu_model_and_workload_run_from_their_own_directory(
    user_dir: Path, tmp_path: Path
) -> None:
    done = _specexp(
        "--config-dir", str(user_dir), *CELL, f"hydra.run.dir={tmp_path / 'a'}", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    record = _record(tmp_path / "a")
    assert record["status"] == "ok"
    conditions = record["measurements"][0]["conditions"]
    assert (conditions["hardware"], conditions["model"], conditions["workload"]) == (
        "rtx4090",
        "mistral-7b-v0.3",
        "support_chat@1",
    )
    assert record["provenance"]["config"]["hardware"]["memory_gib"] == 24

    searched = _specexp(
        f"hydra.searchpath=[file://{user_dir}]",
        *CELL,
        f"hydra.run.dir={tmp_path / 'b'}",
        cwd=tmp_path,
    )
    assert searched.returncode == 0, searched.stderr
    assert (
        _record(tmp_path / "b")["run_id"] == record["run_id"]
    )  # the same cell, however the directory is named


def test_a_sweep_composes_every_cell_from_the_users_directory(
    user_dir: Path, tmp_path: Path
) -> None:
    done = _specexp(
        "--config-dir",
        str(user_dir),
        "-m",
        *CELL,
        "drafter=none,ngram",
        f"hydra.sweep.dir={tmp_path}",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(p.read_text()) for p in tmp_path.rglob("result.json")]
    assert sorted(r["conditions"]["drafter"] for r in records) == ["ngram", "none"]
    assert all(r["conditions"]["hardware"] == "rtx4090" for r in records)


def test_errors_and_help_list_the_users_options(user_dir: Path, tmp_path: Path) -> None:
    wrong = _specexp("--config-dir", str(user_dir), "hardware=rtx409", cwd=tmp_path)
    assert wrong.returncode != 0
    assert (
        "accepted: " in wrong.stderr
        and "rtx4090" in wrong.stderr
        and "did you mean 'rtx4090'" in wrong.stderr
    )
    shown = _specexp("--config-dir", str(user_dir), "--help", cwd=tmp_path)
    assert (
        "rtx4090" in shown.stdout
        and "mistral-7b-v0.3" in shown.stdout
        and "support_chat" in shown.stdout
    )
    plain = _specexp("--help", cwd=tmp_path)
    assert "rtx4090" not in plain.stdout  # only where the directory is given


def test_a_bad_value_in_a_users_file_names_that_file(user_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(user_dir, bad)
    path = bad / "hardware" / "rtx4090.yaml"
    path.write_text(path.read_text().replace("arch: ada", "arch: pascal"))
    done = _specexp("--config-dir", str(bad), *CELL, cwd=tmp_path)
    assert done.returncode != 0
    assert (
        str(path) in done.stderr and "hardware.arch" in done.stderr and "accepted: " in done.stderr
    )
