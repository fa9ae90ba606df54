"""CheckReport -> Markdown or JSON. Renders data only; decides nothing.

`render_md` is the whole output of `python -m specexp.check`; `published_figures_md` and
`comparability_md` are the two sections a measurements report can embed as they are.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from specexp.check.against import Citation, RunMatch
from specexp.check.api import CheckReport, FigureCheck
from specexp.check.fairness import Comparison
from specexp.check.findings import SEVERITIES, Finding
from specexp.check.plausibility import Limit
from specexp.check.relevance import SIMULATED_STANDS_IN
from specexp.check.values import show
from specexp.record.escape import cell, code_span, link
from specexp.spec.vocabulary import METRICS


def render_json(report: CheckReport) -> str:
    return json.dumps(report.to_json(), indent=2, default=str) + "\n"


def render_md(report: CheckReport) -> str:
    parts = [f"# Cited figures: {cell(report.where)}", "", summary(report), ""]
    if report.comparisons:
        parts += ["## Comparisons", ""]
        for i, c in enumerate(report.comparisons, 1):
            parts += comparison_md(c, i)
    else:
        parts += [
            "No comparisons declared (`comparisons:`): only the figures themselves were checked.",
            "",
        ]
    parts += ["## Figures", "", *figures_table(report.figures), ""]
    if report.runs is not None:
        parts += [f"## Against runs ({report.runs} measurements)", ""]
        for fc in report.figures:
            if fc.citation is not None:
                parts += citation_md(fc.citation)
    parts += ["## Findings", "", *findings_table(report.findings)]
    return "\n".join(parts).rstrip() + "\n"


def summary(report: CheckReport) -> str:
    verdicts = [c.verdict for c in report.comparisons]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("fair", "unfair", "unverifiable"))
    sev = ", ".join(f"{sum(f.severity == s for f in report.findings)} {s}" for s in SEVERITIES)
    word = "fair" if report.exit_status == 0 else "not fair"
    return (
        f"**Result: {word}** (exit status {report.exit_status}). "
        f"{len(verdicts)} comparison(s): {counts}. Findings: {sev}."
    )


def comparison_md(c: Comparison, number: int) -> list[str]:
    a, b = c.figures
    out = [f"### {number}. {code_span(a)} vs {code_span(b)}: **{c.verdict}**", ""]
    vary = ", ".join(f"{code_span(v)}" for v in c.vary) or "nothing"
    out += [f"Varies {vary}. Metrics: {code_span(c.metrics[0])} vs {code_span(c.metrics[1])}.", ""]
    if c.metric_mismatch:
        out += [f"- **Metric definitions differ:** {cell(c.metric_mismatch)}", ""]
    rows = [
        (d.condition, show(d.values[0]), show(d.values[1]), "**confounder**") for d in c.confounders
    ]
    rows += [
        (
            u.condition,
            show(u.value) if u.stated_by == a else "?",
            show(u.value) if u.stated_by == b else "?",
            "unknown",
        )
        for u in c.unknown
    ]
    rows += [(d.condition, show(d.values[0]), show(d.values[1]), "varied") for d in c.varied]
    rows += [
        (d.condition, show(d.values[0]), show(d.values[1]), "cannot move the metric")
        for d in c.not_relevant
    ]
    if rows:
        out += [f"| condition | {code_span(a)} | {code_span(b)} | |", "|---|---|---|---|"]
        out += [f"| {code_span(r[0])} | {cell(r[1])} | {cell(r[2])} | {r[3]} |" for r in rows]
        out.append("")
    if c.unstated:
        out += [
            "Stated for neither (may be shared, unverified): "
            + ", ".join(f"{code_span(u)}" for u in c.unstated),
            "",
        ]
    noise = next((f for f in c.findings if f.rule.startswith("score_")), None)
    if noise is not None:
        verdict = {
            "score_within_noise": "within noise",
            "score_beyond_noise": "beyond noise",
            "score_noise_unknown": "cannot be judged",
        }[noise.rule]
        out += [f"**Scores {verdict}:** {cell(noise.found)}", ""]
    return out


def figures_table(checks: Sequence[FigureCheck]) -> list[str]:
    out = [
        "| id | figure | metric | source | conditions stated | physical limit |",
        "|---|---|---|---|---|---|",
    ]
    for fc in checks:
        f = fc.figure
        stated = ", ".join(f"{k}={show(v)}" for k, v in f.conditions.items()) or "none"
        out.append(
            f"| {code_span(f.id)} | {cell(fig_value(f.value, f.unit))} | {code_span(f.metric)} | {cell(f.source or '')} | "
            f"{cell(stated)} | {cell(limit_text(fc.limit))} |"
        )
    return out


def limit_text(lim: Limit | str) -> str:
    if isinstance(lim, str):
        return f"none: {lim}"
    sign = "≤" if lim.bound == "max" else "≥"
    return f"{sign} {lim.value:.4g} ({lim.basis})"


def citation_md(c: Citation) -> list[str]:
    f = c.figure
    out = [f"### {code_span(f.id)}: {cell(fig_value(f.value, f.unit))} {code_span(f.metric)}", ""]
    if c.matches:
        out += [
            "Runs whose conditions match:",
            "",
            *_match_table(c.matches, "not stated by the figure"),
            "",
        ]
        stated = [k for k in SIMULATED_STANDS_IN if k in f.conditions]
        if stated and any(m.run.origin == "simulated" for m in c.matches):
            out += [
                "Simulated runs stand in for "
                + ", ".join(f"{code_span(k)} = {cell(show(f.conditions[k]))}" for k in stated)
                + ": their ratio compares specexp's simulation of that setup with the published measurement, "
                "not two engines.",
                "",
            ]
        if c.unsettled:
            out += [
                "The figure does not say which of these it is: "
                + "; ".join(
                    f"{code_span(k)} = {cell(', '.join(show(v) for v in vs))}"
                    for k, vs in c.unsettled
                ),
                "",
            ]
    elif c.closest:
        out += [
            "No run matches (so no reproduction ratio). Closest runs:",
            "",
            *_match_table(c.closest, "differs"),
            "",
        ]
    if c.missing:
        out += [
            "No run has "
            + ", ".join(f"{code_span(k)} = {cell(show(v))}" for k, v in c.missing)
            + ".",
            "",
        ]
    if not c.matches and not c.closest:
        out += [f"No run has a value of {code_span(f.metric)}.", ""]
    return out


def _match_table(matches: Sequence[RunMatch], what: str) -> list[str]:
    if what == "differs":
        out = [f"| run | source | value | verdict | {what} |", "|---|---|---|---|---|"]
    else:
        out = [
            f"| run | source | value | ratio (run / cited) | verdict | {what} |",
            "|---|---|---|---|---|---|",
        ]
    for m in matches:
        comp = m.comparison
        if what == "differs":
            detail = "; ".join(
                f"{d.condition}: {show(d.values[0])} (cited) vs {show(d.values[1])}"
                for d in comp.confounders
            )
        else:
            detail = ", ".join(u.condition for u in comp.unknown if u.stated_by == m.run.id)
        run = link(code_span(m.run.id), m.run.link) if m.run.link else code_span(m.run.id)
        value = cell(fig_value(m.value, METRICS[comp.metrics[1]].unit))
        ratio = "" if what == "differs" else f"{cell(ratio_text(m.ratio))} | "
        out.append(
            f"| {run} | {m.run.origin} | {value} | {ratio}{comp.verdict} | {cell(detail or '—')} |"
        )
    return out


def findings_table(findings: Sequence[Finding]) -> list[str]:
    if not findings:
        return ["No findings."]
    out = ["| severity | rule | figures | expected | found |", "|---|---|---|---|---|"]
    order = sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
    for f in order:
        ids = ", ".join(f"{code_span(x)}" for x in f.figures[:4]) + (
            f" (+{len(f.figures) - 4})" if len(f.figures) > 4 else ""
        )
        out.append(
            f"| {f.severity} | {code_span(f.rule)} | {ids} | {cell(f.expected)} | {cell(f.found)} |"
        )
    return out


def published_figures_md(report: CheckReport, heading: str = "## Published figures") -> str:
    """Each cited figure beside the runs that match it (ratio, verdict, confounders, unknowns),
    or the conditions no run has."""
    if not report.figures:
        return ""
    out = [heading, ""]
    for fc in report.figures:
        if fc.citation is not None:
            out += citation_md(fc.citation)
    if report.comparisons:
        out += [
            "Comparisons declared with the figures:",
            "",
            *comparisons_table(report.comparisons),
            "",
        ]
    conflicts = [f for f in report.findings if f.rule.startswith("source_")]
    if conflicts:
        out += ["Sources that contradict themselves:", "", *findings_table(conflicts), ""]
    return "\n".join(out).rstrip() + "\n"


def comparisons_table(comparisons: Sequence[Comparison]) -> list[str]:
    """One line per comparison: verdict, confounders (value on each side), unknowns, metric mismatch."""
    out = [
        "| figures | verdict | confounders | unknown | metric definitions |",
        "|---|---|---|---|---|",
    ]
    for c in comparisons:
        conf = "; ".join(
            f"{d.condition}: {show(d.values[0])} vs {show(d.values[1])}" for d in c.confounders
        )
        unknown = ", ".join(u.condition for u in c.unknown)
        out.append(
            f"| {code_span(c.figures[0])} vs {code_span(c.figures[1])} | {c.verdict} | {cell(conf or '—')} | "
            f"{cell(unknown or '—')} | {cell(c.metric_mismatch or 'same')} |"
        )
    return out


def comparability_md(report: CheckReport, heading: str = "## Comparability") -> str:
    """Numbers side by side that differ in more than their varied axis, and implausible figures."""
    out = [heading, ""]
    if report.comparability:
        out += [
            "Numbers side by side that differ in more than the varied axis:",
            "",
            *findings_table(report.comparability),
            "",
        ]
    else:
        out += ["Numbers shown side by side differ only in the conditions their table varies.", ""]
    if report.implausible:
        out += [
            "Beyond a physical limit (the datasheet roofline, or what the figure's definition allows), so implausible:",
            "",
            *findings_table(report.implausible),
            "",
        ]
    else:
        out += [
            "No figure is beyond the hardware's physical limit (datasheet roofline) "
            "or outside what its definition allows.",
            "",
        ]
    if report.without_datasheet:
        names = ", ".join(f"`{h}`" for h in report.without_datasheet)
        out += [
            f"Figures on {names} have no physical limit to be checked against: that hardware "
            "file's bandwidth and FLOP/s are assumed, not a datasheet's.",
            "",
        ]
    return "\n".join(out).rstrip() + "\n"


def fig_value(value: Any, unit: str) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(fig_value(v, unit) for v in value) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if unit.startswith("ratio"):
            return f"{value * 100:.1f} %"
        return f"{value:.4g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{value} {unit}".strip()


def ratio_text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, tuple):
        return " / ".join(f"{v:.2f}" for v in value)
    return f"{value:.2f}"
