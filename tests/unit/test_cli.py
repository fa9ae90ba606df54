"""`python -m specexp`, end to end in a subprocess: bad input stops with one line and exit 2
before anything is written; good input leaves result.json, results.jsonl and measurements.md."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
SPEC_COLUMNS = (
    "`decode_tps`",
    "`e2e_tps`",
    "`ttft_s`",
    "`acceptance_rate`",
    "`acceptance_by_position`",
    "`tokens_per_pass`",
)


def _one_line_exit_2(proc: subprocess.CompletedProcess[str], sweep: Path) -> str:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("specexp: ")
    assert not sweep.exists() or not any(sweep.iterdir()), sorted(sweep.rglob("*"))
    return lines[0]


# --- validation -------------------------------------------------------------------------


BAD_INPUT = [
    (["drafter=mtpp"], ["override drafter=mtpp", "drafter:", "accepted:", "did you mean 'mtp'?"]),
    (["drafter=mtp,mtpp", "k=3"], ["override drafter=mtp,mtpp", "did you mean 'mtp'?"]),
    (
        ["workload.output_tokenz=5"],
        [
            "override workload.output_tokenz=5",
            "workload.output_tokenz",
            "accepted:",
            "did you mean 'output_tokens'?",
        ],
    ),
    (["k=abc"], ["override k=abc", "k:", "integer", "'abc'"]),
    (
        ["runtime.name=vlm"],
        [
            "override runtime.name=vlm",
            "runtime.name",
            "accepted: sim, vllm",
            "did you mean 'vllm'?",
        ],
    ),
    (
        ["+experiment=no_such_study"],
        ["override +experiment=no_such_study", "experiment", "no experiment named 'no_such_study'"],
    ),
]


@pytest.mark.parametrize(("args", "fragments"), BAD_INPUT, ids=[" ".join(a) for a, _ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    args: list[str], fragments: list[str], specexp_cli: Cli, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep"
    proc = specexp_cli("-m", *args, f"hydra.sweep.dir={sweep}")
    line = _one_line_exit_2(proc, sweep)
    for fragment in fragments:
        assert fragment in line


def test_nested_key_typo_exits_2_with_one_line(specexp_cli: Cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    proc = specexp_cli("-m", "hardware.achieved.bandwith=0.5", f"hydra.sweep.dir={sweep}")
    line = _one_line_exit_2(proc, sweep)
    assert "did you mean 'bandwidth'?" in line


def test_every_mistaken_override_is_named_at_once(specexp_cli: Cli, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    proc = specexp_cli(
        "-m",
        "drafter=mtpp",
        "workload=fresh_generaton",
        "workload.ouput_tokens=5",
        "k=3",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert [line.split(":", 2)[1].strip() for line in lines] == [
        "override drafter=mtpp",
        "override workload=fresh_generaton",
        "override workload.ouput_tokens=5",
    ]
    for line, guess in zip(lines, ("mtp", "fresh_generation", "output_tokens"), strict=True):
        assert line.startswith("specexp: ") and f"did you mean '{guess}'?" in line
    assert not sweep.exists() or not any(sweep.iterdir())


def test_single_run_with_bad_input_writes_no_result(specexp_cli: Cli, tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = specexp_cli("k=abc", f"hydra.run.dir={run}")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not list(run.rglob("result.json"))


@pytest.fixture(scope="module")
def conf_copy(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> Callable[[], Path]:
    """A private copy of the package and its conf/, so that broken conf files can be tried
    without touching the clone's."""

    def make() -> Path:
        root = tmp_path_factory.mktemp("clone")
        for name in ("specexp", "hydra_plugins", "conf", "templates", "experiments"):
            shutil.copytree(repo / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        return root

    return make


def _run_copy(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)
    return subprocess.run(
        [sys.executable, "-m", "specexp", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bad_literal_in_a_conf_file_names_the_file(
    conf_copy: Callable[[], Path], tmp_path: Path
) -> None:
    root = conf_copy()
    sim = root / "conf" / "runtime" / "sim.yaml"
    sim.write_text(sim.read_text().replace("name: sim", "name: vlm"))
    sweep = tmp_path / "sweep"
    line = _one_line_exit_2(_run_copy(root, "-m", f"hydra.sweep.dir={sweep}"), sweep)
    assert "conf/runtime/sim.yaml: runtime.name:" in line
    assert "accepted: sim, vllm" in line and "did you mean 'vllm'?" in line


def test_extra_key_in_a_conf_file_names_the_file(
    conf_copy: Callable[[], Path], tmp_path: Path
) -> None:
    root = conf_copy()
    workload = root / "conf" / "workload" / "fresh_generation.yaml"
    workload.write_text(workload.read_text() + "output_tokenz: 5\n")
    sweep = tmp_path / "sweep"
    line = _one_line_exit_2(_run_copy(root, "-m", f"hydra.sweep.dir={sweep}"), sweep)
    assert "conf/workload/fresh_generation.yaml: workload.output_tokenz: unknown key" in line
    assert "did you mean 'output_tokens'?" in line


def test_extra_key_in_a_file_chosen_on_the_command_line_names_the_file(
    conf_copy: Callable[[], Path], tmp_path: Path
) -> None:
    root = conf_copy()
    text = (root / "conf" / "drafter" / "mtp.yaml").read_text()  # `name` must stay a known drafter
    (root / "conf" / "drafter" / "typo.yaml").write_text(text + "acceptance_tial: 0.5\n")
    sweep = tmp_path / "sweep"
    line = _one_line_exit_2(
        _run_copy(root, "-m", "drafter=typo", f"hydra.sweep.dir={sweep}"), sweep
    )
    assert "conf/drafter/typo.yaml: drafter.acceptance_tial: unknown key" in line


# --- end to end -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mtp_dspark_sweep(
    tmp_path_factory: pytest.TempPathFactory, specexp_cli: Cli
) -> tuple[Path, Any]:
    sweep = tmp_path_factory.mktemp("e2e") / "sweep"
    proc = specexp_cli("-m", "drafter=mtp,dspark", "k=3,8,15", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr
    return sweep, proc


def test_a_sweep_flag_after_the_overrides_still_sweeps(specexp_cli: Cli, tmp_path: Path) -> None:
    """`+experiment=NAME -m hydra.sweep.dir=DIR`, as the help writes a study's command with a
    folder added, sweeps where Hydra's own parser would refuse the override after -m."""
    sweep = tmp_path / "sweep"
    proc = specexp_cli(
        "workload.output_tokens=8", "-m", "k=3,8", "drafter=mtp", f"hydra.sweep.dir={sweep}"
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list(sweep.glob("*/result.json"))) == 3  # k = 3 and 8, and the baseline


def test_sweep_writes_one_result_per_cell(
    mtp_dspark_sweep: tuple[Path, Any], read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    sweep, _ = mtp_dspark_sweep
    results = read_results(sweep)
    assert len(results) == 7  # 2 drafters x 3 k, and the drafter=none baseline the sweep adds
    assert {r["status"] for r in results} == {"ok"}
    cells = {(r["conditions"]["drafter"], r["conditions"]["k"]) for r in results}
    assert cells == {(d, k) for d in ("mtp", "dspark") for k in (3, 8, 15)} | {("none", None)}
    assert len({r["run_id"] for r in results}) == 7
    for r in results:
        assert r["conditions"]["source"] == "simulated"
        for m in r["measurements"]:
            assert m["conditions"]["source"] == "simulated"


def test_sweep_writes_results_jsonl(
    mtp_dspark_sweep: tuple[Path, Any],
    jsonl: Callable[[Path], list[dict[str, Any]]],
    read_results: Callable[[Path], list[dict[str, Any]]],
) -> None:
    sweep, _ = mtp_dspark_sweep
    lines = jsonl(sweep / "results.jsonl")
    assert len(lines) == sum(len(r["measurements"]) for r in read_results(sweep)) == 7
    for line in lines:
        # one window each: its figures' values are there, but no interval (nothing to resample)
        assert set(line) == {
            "run_id",
            "status",
            "conditions",
            "metrics",
            "spread",
            "samples",
            "judgments",
        }
        assert set(line["judgments"]) == {
            "output_identical",
            "baseline_run_id",
            "speedup_metric",
            "speedup_vs_baseline",
            "speedup_within_noise",
            "speedup_interval",
            "pass_cost_steps",
            "sampled_verdict",
            "sampled_p_value",
            "sampled_detectable_shift",
            "score_difference",
            "score_interval",
            "mcnemar_p",
            "score_verdict",
        }


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Markdown tables as (header cells, row cells)."""

    def cells(line: str) -> list[str]:
        return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]

    found, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
        else:
            if len(block) >= 2:
                found.append((cells(block[0]), [cells(x) for x in block[2:]]))
            block = []
    return found


def test_sweep_writes_measurements_md(
    mtp_dspark_sweep: tuple[Path, Any], read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    sweep, _ = mtp_dspark_sweep
    text = (sweep / "measurements.md").read_text(encoding="utf-8")
    top = [line.lower() for line in text.splitlines()[:5]]
    assert any("simulated" in line and "simulator" in line for line in top), (
        "no line says the figures are simulated"
    )
    [(header, rows)] = [t for t in _tables(text) if any("`decode_tps`" in h for h in t[0])]
    for column in SPEC_COLUMNS:
        assert any(column in h for h in header), column
    assert header[:2] == ["drafter", "k"]
    assert len(rows) == 7
    run_ids = {r["run_id"] for r in read_results(sweep)}
    assert {re.search(r"`([0-9a-f]{12})`", row[-1]).group(1) for row in rows} == run_ids  # type: ignore[union-attr]
    acceptance = next(i for i, h in enumerate(header) if "`acceptance_rate`" in h)
    for row in rows:
        assert len(row) == len(header)
        if row[0] == "none":
            assert row[1] == "—" and row[acceptance] == "—"
            continue
        assert row[0] in ("mtp", "dspark") and row[1] in ("3", "8", "15")
        assert row[acceptance].endswith("%")


@pytest.fixture(scope="module")
def single_run(tmp_path_factory: pytest.TempPathFactory, specexp_cli: Cli) -> tuple[Path, Any]:
    """One job without -m, at three concurrency levels and 800 output tokens."""
    run = tmp_path_factory.mktemp("single") / "run"
    proc = specexp_cli(
        f"hydra.run.dir={run}", "workload.concurrency=[1,4,16]", "workload.output_tokens=800"
    )
    assert proc.returncode == 0, proc.stderr
    return run, proc


def test_single_run_writes_the_same_three_files(
    single_run: tuple[Path, Any], read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    run, proc = single_run
    assert (run / "result.json").is_file()
    assert (run / "results.jsonl").is_file()
    assert (run / "measurements.md").is_file()
    [result] = read_results(run)
    assert result["status"] == "ok"
    assert result["run_id"] in proc.stdout
    assert result["run_id"] in (run / "measurements.md").read_text(encoding="utf-8")


def test_cfg_job_prints_the_composed_config(specexp_cli: Cli, tmp_path: Path) -> None:
    proc = specexp_cli("--cfg", "job", "drafter=mtp", f"hydra.run.dir={tmp_path / 'run'}")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^drafter:$", proc.stdout, re.M)
    assert re.search(r"^workload:$", proc.stdout, re.M)
    assert re.search(r"^  name: mtp$", proc.stdout, re.M)
    assert not (tmp_path / "run").exists()


def test_concurrency_list_gives_one_measurement_per_level(
    single_run: tuple[Path, Any],
    read_results: Callable[[Path], list[dict[str, Any]]],
    jsonl: Callable[[Path], list[dict[str, Any]]],
) -> None:
    run, _ = single_run
    [result] = read_results(run)
    assert [m["conditions"]["concurrency"] for m in result["measurements"]] == [1, 4, 16]
    assert [line["conditions"]["concurrency"] for line in jsonl(run / "results.jsonl")] == [
        1,
        4,
        16,
    ]


def test_output_tokens_override_is_recorded_as_a_condition(
    single_run: tuple[Path, Any],
    read_results: Callable[[Path], list[dict[str, Any]]],
    jsonl: Callable[[Path], list[dict[str, Any]]],
) -> None:
    run, _ = single_run
    [result] = read_results(run)
    assert result["conditions"]["output_tokens"] == 800
    assert [m["conditions"]["output_tokens"] for m in result["measurements"]] == [800] * 3
    assert [line["conditions"]["output_tokens"] for line in jsonl(run / "results.jsonl")] == [
        800
    ] * 3
    assert "workload.output_tokens=800" in result["provenance"]["overrides"]


# --- the installed wheel ----------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory: pytest.TempPathFactory, repo: Path) -> Path:
    """specexp's wheel, built from this tree and installed (without deps) into a bare folder."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(out / "dist"),
            str(repo),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = (out / "dist").glob("specexp-*.whl")
    site = out / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site


def _run_installed(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.slow
def test_wheel_finds_its_own_conf(wheel_site: Path, tmp_path: Path) -> None:
    probe = _run_installed(
        wheel_site,
        tmp_path,
        "-c",
        "import specexp, specexp.spec.paths as p; print(specexp.__file__); print(p.conf_dir()); "
        "print(p.experiments_dir()); print(sorted(p.options('drafter')))",
    )
    assert probe.returncode == 0, probe.stderr
    module, conf, experiments, drafters = probe.stdout.splitlines()
    assert Path(module).is_relative_to(wheel_site)
    assert Path(conf) == wheel_site / "specexp" / "_data" / "conf"
    assert Path(experiments) == wheel_site / "specexp" / "_data" / "experiments"
    assert "mtp" in drafters and "none" in drafters


@pytest.mark.slow
def test_wheel_runs_a_job_outside_the_clone(
    wheel_site: Path, tmp_path: Path, read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    run = tmp_path / "run"
    proc = _run_installed(
        wheel_site,
        tmp_path,
        "-m",
        "specexp",
        f"hydra.run.dir={run}",
        "drafter=mtp",
        "workload.output_tokens=16",
    )
    [result] = read_results(run)
    assert result["status"] == "ok", proc.stderr
    assert result["conditions"]["drafter"] == "mtp"
    assert result["provenance"]["git_sha"] is None  # no clone around it


@pytest.mark.slow
def test_wheel_writes_measurements_md_from_its_own_templates(
    wheel_site: Path, tmp_path: Path
) -> None:
    # Regression: templates/ once stayed out of the wheel, and writing measurements.md crashed.
    run = tmp_path / "run"
    proc = _run_installed(
        wheel_site, tmp_path, "-m", "specexp", f"hydra.run.dir={run}", "workload.output_tokens=16"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "simulat" in (run / "measurements.md").read_text(encoding="utf-8").lower()
    assert (wheel_site / "specexp" / "_data" / "templates" / "measurements.md.j2").is_file()


def test_the_keys_help_shows_most_are_keys_specexp_accepts() -> None:
    from specexp.run.help import COMMON_KEYS, help_text
    from specexp.spec.experiment import ModelSpec
    from specexp.spec.runtime import RUNTIMES
    from specexp.spec.workload import SloSpec, WorkloadSpec

    fields = {
        "workload": set(WorkloadSpec.model_fields),
        "slo": set(SloSpec.model_fields),
        "model": set(ModelSpec.model_fields),
        "runtime": {name for spec in RUNTIMES.values() for name in spec.model_fields},
    }
    text = help_text()
    for example, what in COMMON_KEYS:
        assert example in text and what in text
        for override in example.split():
            key = override.split("=", 1)[0]
            if "." in key:
                group, name = key.split(".", 1)
                assert name in fields[group], f"--help shows {key}, which no spec has"
