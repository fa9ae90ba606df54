"""measurements.md from result records, through the Jinja2 template templates/measurements.md.j2."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from specexp import paths
from specexp.metrics import METRICS
from specexp.record import atomic_write, find_results
from specexp.report.tables import Row, fixed_conditions, rows_of, tables

SPEC_METRICS = ("decode_tps", "e2e_tps", "ttft_s", "acceptance_rate", "acceptance_by_position", "tokens_per_pass")
PREFILL_METRICS = ("ttft_s", "prefill_tps", "cached_prompt_tokens")
CONCURRENCY_METRICS = ("aggregate_tps", "per_stream_tps", "ttft_s", "acceptance_rate", "tokens_per_pass")


def fmt(value: Any, metric: str | None = None) -> str:
    """A number as a person would write it in a measurements table."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " / ".join(fmt(v, metric) for v in value)
    if isinstance(value, float):
        unit = METRICS[metric].unit if metric in METRICS else ""
        if unit.startswith("ratio"):
            return f"{value * 100:.1f} %"
        if unit == "s":
            return f"{value:.3f}" if value < 10 else f"{value:.1f}"
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def header(metric: str) -> str:
    m = METRICS[metric]
    arrow = {"higher": " ↑", "lower": " ↓"}.get(m.better, "")
    unit = "%" if m.unit.startswith("ratio") else m.unit
    return f"{m.label} ({unit}){arrow} `{m.name}`"


def metrics_for(rows: Sequence[Row]) -> list[str]:
    """The metric columns a table needs: prefill tables, concurrency tables, or decode tables."""
    if all(r.conditions.get("output_tokens") == 1 for r in rows):
        return list(PREFILL_METRICS)
    names = list(SPEC_METRICS)
    if any((r.conditions.get("concurrency") or 1) > 1 for r in rows):
        names = list(CONCURRENCY_METRICS)
    if all(r.conditions.get("drafter") == "none" for r in rows):
        names = [n for n in names if n not in ("acceptance_rate", "acceptance_by_position", "tokens_per_pass")]
    return names


def render_measurements(results: Sequence[dict[str, Any]]) -> str:
    rows, failures = rows_of(results)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(paths.templates_dir())),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    sources = sorted({str(r.conditions.get("source")) for r in rows} | {str((f.conditions or {}).get("source")) for f in failures})
    return env.get_template("measurements.md.j2").render(
        rows=rows,
        failures=failures,
        fixed=fixed_conditions(rows) if rows else {},
        tables=[(t, metrics_for(t.rows)) for t in tables(rows)],
        header=header,
        metrics=METRICS,
        simulated="simulated" in sources,
        measured="measured" in sources,
        run_count=len(results),
        escape_cell=escape_cell,
    )


def escape_cell(text: Any) -> str:
    """Text from a server or a log, safe inside a Markdown table cell."""
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace("`", "\\`")


def write_measurements(roots: Sequence[Path], out: Path) -> Path:
    results = [r for _, r in find_results(roots)]
    atomic_write(out, render_measurements(results))
    return out
