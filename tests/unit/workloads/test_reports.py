"""Reports of sessions and datasets: a table by turn, a table by category, and the filler warning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specexp.report.__main__ import main as report
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from tests.conftest import compose_config

BASE = (
    "runtime=sim",
    "model=qwen3-8b",
    "quantization=bf16",
    "hardware=h200",
    "drafter=eagle3",
    "workload.output_tokens=24",
)


def _report(make_spec: Callable[..., Any], tmp_path: Path, *overrides: str) -> str:
    config, _ = compose_config(
        (*BASE, *overrides)
    )  # the composed config the record keeps, as a sweep passes it
    record = run_job(
        make_cell(make_spec(*BASE, *overrides)), tmp_path / "job", None, [*BASE, *overrides], config
    )
    assert record is not None and record.status == "ok", record.error
    out = tmp_path / "measurements.md"
    assert report([str(tmp_path / "job"), "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> list[str]:
    body = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return [line for line in body.splitlines() if line.startswith("| eagle3")]


def test_a_session_report_has_one_row_per_turn(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    text = _report(
        make_spec,
        tmp_path,
        "workload=agentic_sessions",
        "workload.concurrency=[2]",
        "workload.session.turns=3",
        "workload.prompt_tokens=500",
        "workload.session.turn_material=filler",
    )
    rows = _section(text, "Agentic sessions: by turn")
    assert [row.split("|")[3].strip() for row in rows] == ["1", "2", "3"]
    assert "Prefix cache: cold vs warm" not in text  # a session is not a max_tokens = 1 cache probe
    assert "**Warning**: `agentic_sessions v2` measures drafting on random words" in text


def test_a_dataset_report_has_one_row_per_category_and_no_filler_warning(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    text = _report(make_spec, tmp_path, "workload=dataset")
    categories = {row.split("|")[3].strip() for row in _section(text, "Prompts by category")}
    assert categories == {"translation", "summarization", "qa", "math", "code"}
    assert "**Warning**" not in text


def test_the_turn_section_charts_acceptance_by_position(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    """Every section with acceptance figures shows where along the draft they are lost."""
    text = _report(
        make_spec,
        tmp_path,
        "workload=agentic_sessions",
        "workload.concurrency=[2]",
        "workload.session.turns=2",
        "workload.prompt_tokens=500",
        "workload.session.turn_material=filler",
    )
    section = text.split("## Agentic sessions: by turn", 1)[1].split("\n## ", 1)[0]
    charts = [
        line for line in section.splitlines() if line.startswith("![Acceptance by draft position")
    ]
    assert len(charts) == 1 and "](charts/" in charts[0]
