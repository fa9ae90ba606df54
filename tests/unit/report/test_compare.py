"""`python -m specexp.report --compare BEFORE AFTER`: the change named, every measurement paired
on its other conditions, the ratios and their verdicts, what could not be paired and why, and a
CI gate that fails only when AFTER is slower."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_compare

REPO = Path(__file__).resolve().parents[3]
SWEEP = ("-m", "drafter=mtp,dspark", "k=3,8", "workload.output_tokens=64")


def _specexp(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "specexp", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


_compare = run_compare


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same sweep on a DGX Spark and on an H100: one override apart."""
    root = tmp_path_factory.mktemp("sweeps")
    _specexp(*SWEEP, f"hydra.sweep.dir={root / 'spark'}")
    _specexp(*SWEEP, "hardware=h100", f"hydra.sweep.dir={root / 'h100'}")
    return root / "spark", root / "h100"


def test_a_changed_override_is_named_and_every_measurement_paired(
    sweeps: tuple[Path, Path],
) -> None:
    spark, h100 = sweeps
    done = _compare(str(spark), str(h100), "--fail-if-slower", "5")
    assert done.returncode == 0, done.stdout + done.stderr  # the H100 is faster: the gate passes
    assert "**The change**: `hardware` dgx_spark → h100." in done.stdout
    assert (
        "5 pair(s), 0 measurement(s) unpaired" in done.stdout
    )  # 4 drafter cells and their baseline
    rows = [line for line in done.stdout.splitlines() if "`decode_tps`" in line]
    assert len(rows) == 5 and all("faster" in row for row in rows)


def test_the_gate_fails_when_the_second_sweep_is_slower(
    sweeps: tuple[Path, Path], tmp_path: Path
) -> None:
    spark, h100 = sweeps
    done = _compare(
        str(h100),
        str(spark),
        "--fail-if-slower",
        "5",
        "-o",
        str(tmp_path / "gate-report.txt"),
        "--html",
        str(tmp_path / "c.html"),
    )
    assert done.returncode == 1
    text = (tmp_path / "gate-report.txt").read_text()
    assert "fails" in text and "slower" in text and (tmp_path / "c.html").is_file()
    assert _compare(str(h100), str(spark)).returncode == 0  # no gate asked for: a report only


def test_a_sweep_against_its_own_results_jsonl_differs_in_nothing(
    sweeps: tuple[Path, Path],
) -> None:
    spark, _ = sweeps
    done = _compare(str(spark), str(spark / "results.jsonl"), "--fail-if-slower", "0")
    assert done.returncode == 0, done.stdout
    assert "**The change**: none" in done.stdout and "0 measurement(s) unpaired" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "×" in line]
    assert rows and all(line.endswith("| 1.000× | same |") for line in rows)


def test_what_cannot_be_paired_is_listed_with_why(
    sweeps: tuple[Path, Path], tmp_path: Path
) -> None:
    spark, _ = sweeps
    _specexp(
        "-m",
        "drafter=mtp,dspark",
        "k=3,15",
        "workload.output_tokens=64",
        f"hydra.sweep.dir={tmp_path}",
    )
    done = _compare(str(spark), str(tmp_path))
    assert done.returncode == 0
    section = done.stdout.split("## Not paired", 1)[1]
    assert (
        section.count("| before |") == 2 and section.count("| after |") == 2
    )  # k = 8 here, k = 15 there
    assert "nearest measurement differs in k (8)" in section and "differs in k (15)" in section
