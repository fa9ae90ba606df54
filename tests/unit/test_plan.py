"""specexp.plan: canonical cells and run ids, meaningless cells with a reason, server order;
and what the sweep does with them on the command line."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.plan import effective_k, make_cell, make_plan

Spec = Callable[..., Any]
Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_k_means_nothing_without_a_drafter(make_spec: Spec) -> None:
    cells = [make_cell(make_spec("drafter=none", *k)) for k in (["k=3"], ["k=8"], [])]
    assert len({c.run_id for c in cells}) == 1
    assert all(c.spec.k is None and effective_k(c.spec) is None for c in cells)
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
    differing = [("drafter=mtp", "k=8"), ("drafter=dspark", "k=3"), ("drafter=mtp", "k=3", "seed=1"),
                 ("drafter=mtp", "k=3", "workload.output_tokens=800"), ("drafter=mtp", "k=3", "hardware=h200")]
    ids = {make_cell(make_spec(*o)).run_id for o in differing}
    assert a.run_id not in ids and len(ids) == len(differing)


def test_mtp_on_a_model_without_an_mtp_head_is_skipped_with_a_reason(make_spec: Spec) -> None:
    cell = make_cell(make_spec("drafter=mtp", "model=qwen3-8b"))
    assert cell.skip_reason is not None
    assert "mtp" in cell.skip_reason.lower() and "qwen3-8b" in cell.skip_reason
    assert make_cell(make_spec("drafter=mtp", "model=qwen3.8-27b")).skip_reason is None
    assert make_cell(make_spec("drafter=dspark", "model=qwen3-8b")).skip_reason is None


def test_plan_drops_duplicates_and_meaningless_cells_with_reasons(make_spec: Spec) -> None:
    cells = [make_cell(make_spec(*o)) for o in (
        ("drafter=none", "k=3"), ("drafter=none", "k=8"), ("drafter=mtp", "model=qwen3-8b"), ("drafter=mtp",),
    )]
    plan = make_plan(cells)
    assert [i for i, _ in plan.run] == [0, 3]
    skipped = {i: reason for i, _, reason in plan.skipped}
    assert set(skipped) == {1, 2}
    assert "job 0" in skipped[1]
    assert skipped[2] == cells[2].skip_reason


def test_cells_of_one_server_configuration_are_adjacent(make_spec: Spec) -> None:
    # Hydra's order: workload-major, so the drafters alternate.
    order = [("workload=fresh_generation", d) for d in ("drafter=mtp", "drafter=dspark", "drafter=none")]
    order += [("workload=long_essay", d) for d in ("drafter=mtp", "drafter=dspark", "drafter=none")]
    cells = [make_cell(make_spec(*o, "workload.output_tokens=16")) for o in order]
    plan = make_plan(cells)
    assert sorted(i for i, _ in plan.run) == list(range(6))
    keys = [cell.server_key for _, cell in plan.run]
    runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
    assert len(runs) == len(set(keys)) == 3, "a server configuration appears in two separate stretches"
    # Within one server configuration, the sweep's own order is kept.
    for key in set(keys):
        indices = [i for i, cell in plan.run if cell.server_key == key]
        assert indices == sorted(indices)


# --- on the command line ----------------------------------------------------------------


def test_sweep_runs_a_k_without_drafter_once(
    specexp_cli: Cli, tmp_path: Path, read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    sweep = tmp_path / "sweep"
    proc = specexp_cli("-m", "drafter=none", "k=3,8", "workload.output_tokens=16", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr
    results = read_results(sweep)
    assert len(results) == 1
    assert results[0]["status"] == "ok" and results[0]["conditions"]["k"] is None
    assert proc.stdout.count(f"job {results[0]['run_id']}: ok") == 1
    assert "1 left out" in proc.stdout and "k=8" in proc.stdout


def test_sweep_records_a_meaningless_cell_as_skipped(
    specexp_cli: Cli, tmp_path: Path, read_results: Callable[[Path], list[dict[str, Any]]],
    jsonl: Callable[[Path], list[dict[str, Any]]],
) -> None:
    sweep = tmp_path / "sweep"
    proc = specexp_cli("-m", "drafter=mtp,none", "model=qwen3-8b", "workload.output_tokens=16",
                       f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr
    by_drafter = {r["conditions"]["drafter"]: r for r in read_results(sweep)}
    skipped = by_drafter["mtp"]
    assert skipped["status"] == "skipped"
    assert "MTP head" in skipped["error"]["message"] and "qwen3-8b" in skipped["error"]["message"]
    assert skipped["measurements"] == []
    assert by_drafter["none"]["status"] == "ok"
    assert "skip" in proc.stdout and "MTP head" in proc.stdout
    assert {line["status"] for line in jsonl(sweep / "results.jsonl")} == {"ok", "skipped"}
    text = (sweep / "measurements.md").read_text(encoding="utf-8")
    assert skipped["run_id"] in text and "MTP head" in text


def test_rerunning_a_sweep_skips_complete_jobs_and_says_so(
    specexp_cli: Cli, tmp_path: Path, read_results: Callable[[Path], list[dict[str, Any]]]
) -> None:
    sweep = tmp_path / "sweep"
    args = ("-m", "drafter=mtp", "k=3,8", "workload.output_tokens=16", f"hydra.sweep.dir={sweep}")
    first = specexp_cli(*args)
    assert first.returncode == 0, first.stderr
    snapshot = {p: p.read_bytes() for p in sweep.rglob("result.json")}
    assert len(snapshot) == 2
    second = specexp_cli(*args)
    assert second.returncode == 0, second.stderr
    assert {p: p.read_bytes() for p in sweep.rglob("result.json")} == snapshot
    for result in read_results(sweep):
        line = next(x for x in second.stdout.splitlines() if x.startswith(f"job {result['run_id']}:"))
        assert "already complete" in line


@pytest.mark.parametrize("k", ["3", "8"])
def test_run_id_ignores_the_experiment_name(make_spec: Spec, k: str) -> None:
    spec = make_spec("drafter=mtp", f"k={k}")
    plain = make_cell(spec)
    named = make_cell(spec.model_copy(update={"experiment": "my_study"}))
    assert plain.run_id == named.run_id
    assert named.spec.experiment == "my_study"
