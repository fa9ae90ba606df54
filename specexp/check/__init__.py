"""Are these numbers comparable? Cited figures, tables side by side, physical limits.

Command line: ``python -m specexp.check FIGURES.yaml [--against RESULTS_DIR ...] [--format md|json]``
(see ``specexp/check/__main__.py`` and docs/check.md).

API for reports (plain, frozen data; nothing printed, nothing raised but SpecError on bad input)::

    from specexp.check import (load_figures, figures_of_experiment, report_findings, side_by_side,
                               published_figures_md, comparability_md)

    figures = load_figures("figures.yaml")              # FigureSet; SpecError (exit 2) on bad input
    figures = figures_of_experiment("experiments/x.yaml")  # `citations:` / inline `figures:`, or None
    runs = runs_of(find_records([results_dir]))      # one Run per measurement of each RunRecord
    report = report_findings(
        runs,
        figures,                                        # or None
        tables=[side_by_side("edit_heavy", runs, vary=("drafter", "k"),
                             metrics=("decode_tps", "e2e_tps"))],   # or None: one per workload
    )
    report.comparability  # tuple[Finding]: numbers side by side differing beyond the varied axis
    report.implausible    # tuple[Finding]: runs / cited figures beyond the datasheet roofline
    report.figures        # tuple[FigureCheck]: .figure, .limit, .citation (.matches with .ratio and
                          #   .comparison (verdict, confounders, unknown), .closest, .missing)
    report.comparisons    # tuple[Comparison]: the figures file's declared comparisons
    report.findings       # every Finding (rule, severity, figures, expected, found, recommendation)
    report.to_json()      # the same as plain dicts and lists
    published_figures_md(report), comparability_md(report)   # ready-made Markdown sections

Which conditions count for which metric is data: ``specexp.check.relevance.FAMILIES``.
"""

from specexp.check.against import Citation, RunMatch, cite
from specexp.check.api import (
    CheckReport,
    FigureCheck,
    check,
    figures_of_experiment,
    implausible_runs,
    report_findings,
    side_by_side,
)
from specexp.check.fairness import Comparison, Difference, Unknown, compare, source_conflicts
from specexp.check.figures import Figure, FigureSet, load_figure_files, load_figures, parse_figures
from specexp.check.findings import RULES, Finding
from specexp.check.output import comparability_md, published_figures_md, render_json, render_md
from specexp.check.plausibility import Limit, implausible, limit
from specexp.check.relevance import FAMILIES, relevant
from specexp.check.runs import Run, runs_of
from specexp.check.sidebyside import DEFAULT_VARY, SideBySide

__all__ = [
    "DEFAULT_VARY",
    "FAMILIES",
    "RULES",
    "CheckReport",
    "Citation",
    "Comparison",
    "Difference",
    "Figure",
    "FigureCheck",
    "FigureSet",
    "Finding",
    "Limit",
    "Run",
    "RunMatch",
    "SideBySide",
    "Unknown",
    "check",
    "cite",
    "comparability_md",
    "compare",
    "figures_of_experiment",
    "implausible",
    "implausible_runs",
    "limit",
    "load_figure_files",
    "load_figures",
    "parse_figures",
    "published_figures_md",
    "relevant",
    "render_json",
    "render_md",
    "report_findings",
    "runs_of",
    "side_by_side",
    "source_conflicts",
]
