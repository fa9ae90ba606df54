"""specexp.run.plan: canonical cells and run ids, meaningless cells with a reason, server order;
and what the sweep does with them on the command line."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.run.plan import make_cell, make_plan

Spec = Callable[..., Any]
Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_k_means_nothing_without_a_drafter(make_spec: Spec) -> None:
    cells = [make_cell(make_spec("drafter=none", *k)) for k in (["k=3"], ["k=8"], [])]
    assert len({c.run_id for c in cells}) == 1
    assert all(c.spec.k is None for c in cells)
    assert "k=3" in (cells[0].note or "")
    assert cells[2].note is None


def test_default_k_is_the_drafters(make_spec: Spec) -> None:
    implicit = make_cell(make_spec("drafter=mtp"))
    explicit = make_cell(make_spec("drafter=mtp", "k=3"))
    assert implicit.spec.k == explicit.spec.k == 3
    assert implicit.run_id == explicit.run_id


def test_run_id_is_stable_and_content_addressed(make_spec: Spec) -> None:
    a = make_cell(make_spec("drafter=mtp", "k=3"))
    b = make_cell(make_spec("drafter=mtp", "k=3"))
    assert a.run_id == b.run_id and re.fullmatch(r"[0-9a-f]{12}", a.run_id)
    differing = [
        ("drafter=mtp", "k=8"),
        ("drafter=dspark", "k=3"),
        ("drafter=mtp", "k=3", "seed=1"),
        ("drafter=mtp", "k=3", "workload.output_tokens=800"),
        ("drafter=mtp", "k=3", "hardware=h200"),
    ]
    ids = {make_cell(make_spec(*o)).run_id for o in differing}
    assert a.run_id not in ids and len(ids) == len(differing)


def test_mtp_on_a_model_without_an_mtp_head_is_skipped_with_a_reason(make_spec: Spec) -> None:
    cell = make_cell(make_spec("drafter=mtp", "model=qwen3-8b"))
    assert cell.skip_reason is not None
    assert "mtp" in cell.skip_reason.lower() and "qwen3-8b" in cell.skip_reason
    assert make_cell(make_spec("drafter=mtp", "model=qwen3.8-27b")).skip_reason is None
    assert make_cell(make_spec("drafter=dspark", "model=qwen3-8b")).skip_reason is None


def test_plan_drops_duplicates_and_meaningless_cells_with_reasons(make_spec: Spec) -> None:
    cells = [
        make_cell(make_spec(*o))
        for o in (
            ("drafter=none", "k=3"),
            ("drafter=none", "k=8"),
            ("drafter=mtp", "model=qwen3-8b"),
            ("drafter=mtp",),
        )
    ]
    plan = make_plan(cells)
    assert [i for i, _ in plan.run] == [0, 3]
    skipped = {i: reason for i, _, reason in plan.skipped}
    assert set(skipped) == {1, 2}
    assert "job 0" in skipped[1]
    assert skipped[2] == cells[2].skip_reason


def test_cells_of_one_server_configuration_are_adjacent(make_spec: Spec) -> None:
    # Hydra's order: workload-major, so the drafters alternate.
    order = [
        ("workload=fresh_generation", d) for d in ("drafter=mtp", "drafter=dspark", "drafter=none")
    ]
    order += [("workload=long_essay", d) for d in ("drafter=mtp", "drafter=dspark", "drafter=none")]
    cells = [make_cell(make_spec(*o, "workload.output_tokens=16")) for o in order]
    plan = make_plan(cells)
    assert sorted(i for i, _ in plan.run) == list(range(6))
    keys = [cell.server_key for _, cell in plan.run]
    runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    assert len(runs) == len(set(keys)) == 3, (
        "a server configuration appears in two separate stretches"
    )
    # Within one server configuration, the sweep's own order is kept.
    for key in set(keys):
        indices = [i for i, cell in plan.run if cell.server_key == key]
        assert indices == sorted(indices)


# --- on the command line ----------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(
    tmp_path_factory: pytest.TempPathFactory, specexp_cli: Cli
) -> tuple[Path, tuple[str, ...], Any]:
    """drafter=none,mtp x k=3,8 on a model without an MTP head: one real job, one duplicate, two
    meaningless cells."""
    root = tmp_path_factory.mktemp("plan") / "sweep"
    args = (
        "-m",
        "drafter=none,mtp",
        "k=3,8",
        "model=qwen3-8b",
        "workload.output_tokens=16",
        f"hydra.sweep.dir={root}",
    )
    proc = specexp_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return root, args, proc


def test_sweep_runs_a_k_without_drafter_once(
    sweep: tuple[Path, tuple[str, ...], Any], read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    root, _, proc = sweep
    ran = [r for r in read_results(root) if r["conditions"]["drafter"] == "none"]
    assert len(ran) == 1
    assert ran[0]["status"] == "ok" and ran[0]["conditions"]["k"] is None
    # The plan says which cell was left out and why.
    [left_out] = [
        x for x in proc.stdout.splitlines() if "drafter=none k=8" in x and ran[0]["run_id"] in x
    ]
    assert "k=8" in left_out


def test_sweep_records_a_meaningless_cell_as_skipped(
    sweep: tuple[Path, tuple[str, ...], Any],
    read_results: Callable[[Path], list[dict[str, Any]]],
    jsonl: Callable[[Path], list[dict[str, Any]]],
) -> None:
    root, _, proc = sweep
    skipped = [r for r in read_results(root) if r["conditions"]["drafter"] == "mtp"]
    assert sorted(r["conditions"]["k"] for r in skipped) == [3, 8]
    for r in skipped:
        assert r["status"] == "skipped"
        assert "MTP head" in r["error"]["message"] and "qwen3-8b" in r["error"]["message"]
        assert r["measurements"] == []
        assert any(r["run_id"] in x and "MTP head" in x for x in proc.stdout.splitlines())
    assert sorted(line["status"] for line in jsonl(root / "results.jsonl")) == [
        "ok",
        "skipped",
        "skipped",
    ]
    text = (root / "measurements.md").read_text(encoding="utf-8")
    assert all(r["run_id"] in text for r in skipped) and "MTP head" in text


def test_rerunning_a_sweep_skips_complete_jobs_and_says_so(
    sweep: tuple[Path, tuple[str, ...], Any],
    specexp_cli: Cli,
    read_results: Callable[[Path], list[dict[str, Any]]],
) -> None:
    root, args, _ = sweep
    [done] = [r for r in read_results(root) if r["status"] == "ok"]
    [path] = [p for p in root.rglob("result.json") if done["run_id"] in p.parent.name]
    before = path.read_bytes()
    again = specexp_cli(*args)
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == before
    assert len(list(root.rglob("result.json"))) == 3
    assert any(
        done["run_id"] in x and "already complete" in x for x in again.stdout.splitlines()
    ), again.stdout


@pytest.mark.parametrize("k", ["3", "8"])
def test_run_id_ignores_the_experiment_name(make_spec: Spec, k: str) -> None:
    spec = make_spec("drafter=mtp", f"k={k}")
    plain = make_cell(spec)
    named = make_cell(spec.model_copy(update={"experiment": "my_study"}))
    assert plain.run_id == named.run_id
    assert named.spec.experiment == "my_study"


def test_a_sweep_of_drafters_gets_its_baseline_and_prints_speedups(
    tmp_path: Path, specexp_cli: Cli, read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    """The design card's command has no drafter=none cell: one is added, shown as added."""
    root = tmp_path / "card"
    proc = specexp_cli(
        "-m", "drafter=mtp,dspark", "k=3,8", "workload.output_tokens=16", f"hydra.sweep.dir={root}"
    )
    assert proc.returncode == 0, proc.stderr
    added = [line for line in proc.stdout.splitlines() if "(added: the drafters' baseline" in line]
    assert len(added) == 1 and "drafter=none" in added[0]
    drafters = sorted(r["conditions"]["drafter"] for r in read_results(root))
    assert drafters == ["dspark", "dspark", "mtp", "mtp", "none"]
    decode = (
        (root / "measurements.md")
        .read_text()
        .split("## Decode speed by drafter", 1)[1]
        .split("\n## ", 1)[0]
    )
    assert "no baseline" not in decode and decode.count("×") >= 4
    off = tmp_path / "off"
    proc = specexp_cli(
        "-m",
        "drafter=mtp",
        "k=3",
        "baseline=false",
        "workload.output_tokens=16",
        f"hydra.sweep.dir={off}",
    )
    assert proc.returncode == 0, proc.stderr
    assert [r["conditions"]["drafter"] for r in read_results(off)] == ["mtp"]


def test_a_request_longer_than_the_context_is_refused_at_plan_time_with_what_fits(
    make_spec: Spec,
) -> None:
    cell = make_cell(make_spec("workload=edit_heavy", "runtime.max_model_len=8192"))
    prompt, output = cell.spec.workload.prompt_tokens, cell.spec.workload.output_tokens
    assert prompt + output > 8192
    reason = cell.refuse_reason or ""
    assert f"{prompt:,}" in reason and f"{output:,}" in reason and "8,192" in reason
    fixes = re.findall(r"(workload\.output_tokens=\d+|runtime\.max_model_len=\d+)", reason)
    assert fixes, reason
    for fix in fixes:  # every override the line suggests composes, and then the cell fits
        fitted = make_cell(make_spec("workload=edit_heavy", "runtime.max_model_len=8192", fix))
        assert fitted.refuse_reason is None, fix
    fits = make_cell(make_spec("workload=edit_heavy", "runtime.max_model_len=16384"))
    assert fits.refuse_reason is None
    assert make_plan([cell, fits]).run == [(1, fits)]


def test_a_sweep_records_a_cell_too_long_for_its_context_as_refused_and_goes_on(
    specexp_cli: Cli, tmp_path: Path, read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    proc = specexp_cli(
        "-m",
        "workload=edit_heavy",
        "runtime.max_model_len=4096,16384",
        f"hydra.sweep.dir={tmp_path}",
    )
    assert proc.returncode == 0, proc.stderr
    by_len = {
        r["provenance"]["config"]["runtime"]["max_model_len"]: r for r in read_results(tmp_path)
    }
    assert by_len[16384]["status"] == "ok"
    refused = by_len[4096]
    assert refused["status"] == "refused" and refused["error"]["kind"] == "context_too_long"
    [line] = [x for x in proc.stdout.splitlines() if refused["run_id"] in x and "refuse" in x]
    assert "exceeds the context of 4,096" in line and "runtime.max_model_len=" in line


def test_the_answer_checks_on_the_simulator_name_every_real_engine_from_the_registry(
    make_spec: Any,
) -> None:
    from specexp.run.plan import no_text
    from specexp.spec.runtime import RUNTIMES, real_engines

    why = no_text(make_spec("workload=lossless_sampling", "drafter=mtp", "k=3"))
    assert why is not None and "runtime=sim generates no text" in why
    assert set(real_engines()) == {n for n, cls in RUNTIMES.items() if not cls.simulated}
    assert "sim" not in real_engines() and all(name in why for name in real_engines())


def test_a_drafters_figures_for_a_device_added_later_move_only_that_devices_run_ids(
    make_spec: Spec,
) -> None:
    """MTP's figures for the H100 (conf/drafter/mtp.yaml `cost.devices.h100`) came after run ids were
    first issued, and so would any drafter's figures for a device: a job on any other card keeps the id
    it had without them, and a job on that card takes them in."""

    def run_id(hardware: str, drafter: str, *overrides: str) -> str:
        return make_cell(
            make_spec(f"hardware={hardware}", f"drafter={drafter}", "k=3", *overrides)
        ).run_id

    assert run_id("dgx_spark", "mtp") == run_id("dgx_spark", "mtp", "~drafter.cost.devices.h100")
    assert run_id("h200", "mtp") == run_id(
        "h200", "mtp", "drafter.cost.devices.h100.kernel_efficiency=0.5"
    )
    assert run_id("h100", "mtp") != run_id(
        "h100", "mtp", "drafter.cost.devices.h100.kernel_efficiency=0.5"
    )
    added = "+drafter.cost.devices={h200:{kernel_efficiency:0.5}}"
    assert run_id("dgx_spark", "dspark") == run_id("dgx_spark", "dspark", added)
    assert run_id("h200", "dspark") != run_id("h200", "dspark", added)
