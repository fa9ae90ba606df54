"""The checks as one call: cited figures, runs and tables in; a CheckReport of plain data out.

`check()` is what `python -m specexp.check` runs; `report_findings()` is what a report calls
for its "Published figures" and "Comparability" sections. Both collect every finding before
returning; neither prints nor stops at the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specexp.check.against import Citation, cite
from specexp.check.capability import capability_findings
from specexp.check.fairness import Comparison, run_comparisons, source_conflicts
from specexp.check.figures import Figure, FigureSet, load_figures, merge, parse_figures
from specexp.check.findings import Finding, finding
from specexp.check.plausibility import (
    Limit,
    implausible,
    limit,
    needs_no_check,
    without_datasheet,
)
from specexp.check.runs import Run
from specexp.check.sidebyside import DEFAULT_VARY, SideBySide, check_side_by_side
from specexp.check.yamlread import read_yaml
from specexp.spec.errors import SpecError
from specexp.spec.vocabulary import METRICS


@dataclass(frozen=True)
class FigureCheck:
    """One cited figure: its physical limit and, given runs, the runs that match it."""

    figure: Figure
    limit: Limit | str
    """The limit, or why there is none."""
    citation: Citation | None

    def to_json(self) -> dict[str, Any]:
        f = self.figure
        out: dict[str, Any] = {
            "id": f.id,
            "metric": f.metric,
            "value": list(f.value) if isinstance(f.value, tuple) else f.value,
            "unit": f.unit,
            "as_written": f.as_written,
            "source": f.source,
            "conditions": dict(f.conditions),
            "note": f.note,
            "limit": self.limit.to_json()
            if isinstance(self.limit, Limit)
            else {"reason": self.limit},
        }
        if self.citation is not None:
            out["against"] = self.citation.to_json()
        return out


@dataclass(frozen=True)
class CheckReport:
    where: str
    figures: tuple[FigureCheck, ...]
    comparisons: tuple[Comparison, ...]
    comparability: tuple[Finding, ...]
    """Side-by-side findings: table_confounder, table_unknown, table_mixed_source."""
    implausible: tuple[Finding, ...]
    """Cited figures and runs beyond their physical limit."""
    findings: tuple[Finding, ...]
    """Every finding of every check, comparisons first."""
    runs: int | None = None
    """Runs checked against (None: no runs given)."""
    without_datasheet: tuple[str, ...] = ()
    """Hardware of the runs whose files give assumed figures: no physical limit is checked there."""

    @property
    def exit_status(self) -> int:
        """0 when every comparison is fair and no finding is an error, else 1."""
        unfair = any(c.verdict != "fair" for c in self.comparisons)
        return 1 if unfair or any(f.severity == "error" for f in self.findings) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "comparisons": [c.to_json() for c in self.comparisons],
            "figures": [f.to_json() for f in self.figures],
            "findings": [f.to_json() for f in self.findings],
            "runs": self.runs,
            "exit_status": self.exit_status,
        }


def check(figures: FigureSet, runs: Sequence[Run] | None = None) -> CheckReport:
    """Every check on a figures file, and against `runs` when given."""
    comparisons = run_comparisons(figures.figures, figures.comparisons)
    checks = [
        FigureCheck(f, limit(f), cite(f, runs) if runs is not None else None)
        for f in figures.figures.values()
    ]
    wrong = [x for f in figures.figures.values() if (x := implausible(f)) is not None]
    findings = [x for c in comparisons for x in c.findings]
    findings += source_conflicts(figures.figures.values())
    findings += capability_findings(figures.figures.values())
    findings += wrong
    findings += [x for c in checks if c.citation is not None for x in c.citation.findings]
    return CheckReport(
        figures.where,
        tuple(checks),
        tuple(comparisons),
        (),
        tuple(wrong),
        tuple(findings),
        len(runs) if runs is not None else None,
    )


def report_findings(
    runs: Sequence[Run],
    figures: FigureSet | None = None,
    *,
    tables: Sequence[SideBySide] | None = None,
) -> CheckReport:
    """What a report needs to say about comparability, plausibility and cited figures.

    `runs`: the runs of the records (`runs_of`).
    `figures`: cited figures (`load_figures`, `figures_of_experiment`), or None.
    `tables`: the numbers the report puts side by side, each with the conditions it varies
    (`side_by_side`); None means one table per workload varying `DEFAULT_VARY`.
    """
    if tables is None:
        tables = default_tables(runs)
    comparability = [x for t in tables for x in check_side_by_side(t)]
    wrong_runs = implausible_runs(runs)
    assumed = without_datasheet(r.conditions.hardware for r in runs)
    if figures is None:
        return CheckReport(
            "",
            (),
            (),
            tuple(comparability),
            tuple(wrong_runs),
            tuple(wrong_runs + comparability),
            len(runs),
            assumed,
        )
    cited = check(figures, runs)
    return CheckReport(
        cited.where,
        cited.figures,
        cited.comparisons,
        tuple(comparability),
        cited.implausible + tuple(wrong_runs),
        cited.findings + tuple(wrong_runs) + tuple(comparability),
        len(runs),
        assumed,
    )


def side_by_side(
    title: str,
    runs: Iterable[Run],
    vary: Sequence[str] = DEFAULT_VARY,
    metrics: Sequence[str] | None = None,
) -> SideBySide:
    """A table or chart of the report, from the runs it shows."""
    return SideBySide(
        title, tuple(runs), tuple(vary), tuple(metrics) if metrics is not None else None
    )


def default_tables(runs: Sequence[Run]) -> list[SideBySide]:
    """One table per workload, varying the drafter and the workload's own axes."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(str(r.conditions.workload), []).append(r)
    return [SideBySide(name, tuple(members)) for name, members in groups.items()]


def implausible_runs(runs: Sequence[Run]) -> list[Finding]:
    """Every run metric outside what its definition allows or beyond its physical limit (checked
    with the run's own acceptance), and every run whose server counted tokens it never streamed."""
    out = []
    for run in runs:
        for metric, value in vars(run.metrics).items():  # a record's metrics: its fields' values
            if value is None or metric not in METRICS or needs_no_check(metric, value):
                continue
            fig = run.figure(metric)
            if fig is not None and (x := implausible(fig, run.metrics)) is not None:
                out.append(x)
        if run.beyond_stream:
            out.append(
                finding(
                    "implausible",
                    (run.id,),
                    "the server's usage counts at most the tokens it streamed (each token is "
                    "at least one byte of text, or one token id)",
                    f"{sum(run.beyond_stream.values()):,} token(s) more, over "
                    f"{len(run.beyond_stream)} request(s): every tok/s figure of the run is "
                    "computed from that count",
                )
            )
    return out


def figures_of_experiment(path: Path | str) -> FigureSet | None:
    """The figures an experiment file cites: `citations: [FILE, ...]` (relative to the
    experiment's folder) and inline `figures:` / `comparisons:`; None when it cites none."""
    path = Path(path)
    data = read_yaml(path)
    if not isinstance(data, Mapping):
        return None
    sets = []
    citations = data.get("citations")
    if citations is not None:
        if not isinstance(citations, list) or not all(isinstance(c, str) for c in citations):
            raise SpecError(str(path), "citations", "expected a list of figures files")
        sets += [load_figures(_resolve(path, c)) for c in citations]
    if data.get("figures") is not None:
        inline = {k: data[k] for k in ("figures", "comparisons") if k in data}
        sets.append(parse_figures(inline, str(path)))
    return merge(sets) if sets else None


def _resolve(experiment: Path, name: str) -> Path:
    candidate = Path(name)
    if candidate.is_absolute():
        return candidate
    local = experiment.parent / candidate
    return local if local.exists() else candidate
