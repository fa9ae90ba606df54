"""Bad input from a user, through the real command line: exit 2 and one line that names the
override or file, the key, and what to type instead; a file with several mistakes gets one line
per mistake in one run; nothing is run or written."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_compare

Cli = Callable[..., subprocess.CompletedProcess[str]]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my-configs"


def _lines_exit_2(proc: subprocess.CompletedProcess[str], prefix: str = "specexp: ") -> list[str]:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith(prefix) for line in lines), proc.stderr
    return lines


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], prefix: str = "specexp: ") -> str:
    lines = _lines_exit_2(proc, prefix)
    assert len(lines) == 1, proc.stderr
    return lines[0]


# --- the command line ---------------------------------------------------------------------


def test_a_comma_list_without_m_says_to_add_m(specexp_cli: Cli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    line = _one_line_exit_2(specexp_cli("drafter=mtp,dspark", "k=3,8", f"hydra.run.dir={run}"))
    assert line.startswith("specexp: override drafter=mtp,dspark: drafter: ")
    assert f"python -m specexp -m drafter=mtp,dspark k=3,8 hydra.sweep.dir={run}" in line
    assert not run.exists()


def test_a_comma_list_of_a_list_key_also_offers_the_list(specexp_cli: Cli) -> None:
    line = _one_line_exit_2(specexp_cli("workload.concurrency=1,4"))
    assert "-m" in line and "or write workload.concurrency=[1,4] for one list" in line


def test_a_plus_on_a_group_of_the_defaults_says_to_drop_it(specexp_cli: Cli) -> None:
    line = _one_line_exit_2(specexp_cli("+hardware=h200"))
    assert line.startswith("specexp: override +hardware=h200: hardware: ")
    assert line.endswith("write hardware=h200")


@pytest.mark.parametrize("how", ["--config-dir", "hydra.searchpath"])
def test_a_config_dir_that_does_not_exist_is_named(
    how: str, specexp_cli: Cli, tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    named = (
        ["--config-dir", str(missing)]
        if how == "--config-dir"
        else [f"hydra.searchpath=[file://{missing}]"]
    )
    line = _one_line_exit_2(specexp_cli(*named, "hardware=rtx4090"))
    assert line == f"specexp: {missing}: {how}: the config directory does not exist"


def test_a_misspelt_group_in_a_dotted_key_gets_a_did_you_mean(specexp_cli: Cli) -> None:
    line = _one_line_exit_2(specexp_cli("worklaod.output_tokens=100"))
    assert "worklaod.output_tokens: unknown key" in line and "did you mean 'workload'?" in line


@pytest.mark.parametrize("written", ["0", "[0]", "[-1]", "[1,-4]", "[]"])
def test_a_concurrency_below_one_is_refused_with_its_range(
    written: str, specexp_cli: Cli, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    proc = specexp_cli(f"workload.concurrency={written}", f"hydra.run.dir={run}")
    line = _one_line_exit_2(proc)
    assert line.startswith(f"specexp: override workload.concurrency={written}: ")
    assert "workload.concurrency: each level must be an integer >= 1" in line
    assert not run.exists()


# --- a user's own config file ---------------------------------------------------------------


def test_every_mistake_of_a_users_file_is_named_in_one_run(
    specexp_cli: Cli, tmp_path: Path
) -> None:
    mine = tmp_path / "my-configs"
    shutil.copytree(EXAMPLE, mine)
    path = mine / "hardware" / "rtx4090.yaml"
    text = path.read_text()
    for right, wrong in [
        ("memory_bandwidth_gbps:", "memory_bandwith_gbps:"),
        ("arch: ada", "arch: pascal"),
        ("  bandwidth: 0.90", "  bandwith: 0.90"),
    ]:
        assert right in text
        text = text.replace(right, wrong)
    path.write_text(text)
    proc = specexp_cli(
        "--config-dir",
        str(mine),
        "hardware=rtx4090",
        "model=mistral-7b-v0.3",
        "runtime.max_model_len=16384",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    lines = _lines_exit_2(proc)
    assert len(lines) == 3, lines
    assert all(line.startswith(f"specexp: {path}: hardware.") for line in lines)
    said = "\n".join(lines)
    assert "hardware.memory_bandwith_gbps: unknown key" in said
    assert "did you mean 'memory_bandwidth_gbps'?" in said
    assert "hardware.achieved.bandwith: unknown key" in said and "did you mean 'bandwidth'?" in said
    assert "hardware.arch:" in said and "'pascal'" in said
    assert "required key is missing" not in said  # the misspelling is the mistake, named once


# --- python -m specexp.report --compare ---------------------------------------------------------


_compare = run_compare


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory, specexp_cli: Cli) -> Path:
    """A folder with one finished simulated run."""
    run = tmp_path_factory.mktemp("run")
    done = specexp_cli("workload.output_tokens=32", f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr
    return run


def test_a_compare_against_an_empty_folder_fails_the_gate(one_run: Path, tmp_path: Path) -> None:
    empty = tmp_path / "baseline"
    empty.mkdir()
    line = _one_line_exit_2(
        _compare(str(empty), str(one_run), "--fail-if-slower", "5"), "specexp.report: "
    )
    assert (
        line == f"specexp.report: {empty}: --compare BEFORE: no records (no result.json under it)"
    )
    jsonl = tmp_path / "results.jsonl"
    jsonl.write_text("")
    line = _one_line_exit_2(_compare(str(one_run), str(jsonl)), "specexp.report: ")
    assert line.startswith(f"specexp.report: {jsonl}: --compare AFTER: no records")


def _with(line: dict, **conditions: object) -> str:
    return json.dumps({**line, "conditions": {**line["conditions"], **conditions}})


def test_a_compare_with_no_comparable_pair_fails_the_gate(one_run: Path, tmp_path: Path) -> None:
    line = json.loads((one_run / "results.jsonl").read_text().splitlines()[0])
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    before.write_text(
        _with(line, workload="edit_heavy@1", concurrency=1)
        + "\n"
        + _with(line, workload="fresh_generation@1", concurrency=4)
    )
    after.write_text(
        _with(line, workload="edit_heavy@1", concurrency=4)
        + "\n"
        + _with(line, workload="fresh_generation@1", concurrency=1)
    )
    said = _one_line_exit_2(
        _compare(str(before), str(after), "--fail-if-slower", "5"), "specexp.report: "
    )
    assert "--compare: no pair of comparable measurements" in said
    assert "nearest measurement differs in" in said


def test_a_results_line_that_is_not_one_is_named_by_file_and_line(
    one_run: Path, tmp_path: Path
) -> None:
    """A committed results.jsonl is untrusted input: a line that is not JSON, or names a condition
    the vocabulary does not have, stops --compare with one line naming the file, the line and what is
    wrong, never a traceback."""
    good = (one_run / "results.jsonl").read_text().splitlines()[0]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(good + "\n" + good[:40] + "\n")
    said = _one_line_exit_2(_compare(str(one_run), str(broken)), "specexp.report: ")
    assert said.startswith(f"specexp.report: {broken}: line 2: ")
    line = json.loads(good)
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(_with(line, gpu_colour="green") + "\n")
    said = _one_line_exit_2(_compare(str(unknown), str(one_run)), "specexp.report: ")
    assert said.startswith(f"specexp.report: {unknown}: line 1: conditions.gpu_colour")
