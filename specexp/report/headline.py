"""The report's first section, "Findings": what the records say, written by rules, not by hand.

- per workload, setup and concurrency, the fastest configuration and its speedup over the
  drafter=none baseline (over the metric its table divides: specexp.check.judgments), with its
  spread and interval, or "within noise" when the speedup's bootstrap interval holds 1;
- where speculation stops paying: in k (a drafter's best k, and the larger k that falls back),
  in concurrency (the first level at which an arm is slower than no drafter) and in context depth
  (specexp.report.depth: the depths that bracket it and the crossing between them);
- how far the figures moved between fresh server starts against within one server
  (specexp.report.certainty), where some ran on several;
- the highest request rate that meets the SLO, per arm, where one was set;
- what was refused, failed, skipped, partial, contaminated or client-bound;
- what the answer checks say (the sampled outputs' and task scores' verdicts);
- what bounds the simulated figures (specexp.report.why: the largest of the engine's costs);
- which figures are simulated.

Every finding links to the section whose table holds its numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.check.answer_verdicts import checked_runs
from specexp.record import RunRecord
from specexp.record.escape import Markdown, code_span
from specexp.record.kinds import measurement_kinds
from specexp.report.answers import TITLE as ANSWERS
from specexp.report.blocks import Block, Heading, Paragraph
from specexp.report.certainty import certainty_lines
from specexp.report.depth import covered, depth_lines
from specexp.report.fastest import arm_of, fastest_lines, ranking, setups
from specexp.report.format import arm, number
from specexp.report.links import anchor, table_link
from specexp.report.tables import TITLES, Row
from specexp.report.why import why_lines
from specexp.spec.runtime import settings_for


def findings_section(
    rows: Sequence[Row],
    failures: Sequence[Any],
    records: Sequence[RunRecord] = (),
    kinds: Sequence[str] | None = None,
) -> list[Block]:
    kinds = measurement_kinds(rows) if kinds is None else kinds
    by_row = {id(r): s for r, s in zip(rows, kinds, strict=True)}
    decode = [r for r in rows if by_row[id(r)] == "decode"]
    by_depth = covered(decode)  # said by depth, not as one depth's fastest
    found = setups([r for r in rows if id(r) not in by_depth], by_row)
    lines = ranking(found) + fastest_lines(found) + depth_lines(decode)
    lines += certainty_lines(rows, kinds)
    lines += _slo_lines(rows, by_row)
    lines += _answer_lines(records)
    lines += _identity_lines(rows)
    lines += _trouble(rows, failures, records)
    lines += why_lines(rows, kinds)
    simulated = sum(1 for r in rows if r.conditions.source == "simulated")
    if rows and simulated == len(rows):
        lines.append(
            "- Every figure is **simulated** by specexp's simulator, not measured on a server."
        )
    elif simulated:
        lines.append(
            f"- {simulated} of {len(rows)} figures are **simulated** (their `source` says so)."
        )
    if not lines:
        return []
    return [Heading("Findings"), Paragraph(Markdown("\n".join(lines)))]


def _answer_lines(records: Sequence[RunRecord]) -> list[str]:
    """What the answer checks say, drafter run by drafter run (docs/answers.md)."""
    link = f"[table](#{anchor(ANSWERS)})"
    out = []
    for record, check in checked_runs(records):
        c = record.conditions
        named = arm(str(c.drafter), c.k)
        where = (
            f"at temperature {c.temperature:g}"
            if check.sampled is not None
            else f"on `{c.task or c.workload}`"
        )
        out.append(
            f"- {named} {where}, {check.what} against the baseline's: **{check.verdict}** "
            f"({check.details}) {link}"
        )
    return out


def _slo_lines(rows: Sequence[Row], by_row: dict[int, str]) -> list[str]:
    """Per arm of the open-loop rows with an SLO: the highest rate with every lower one meeting it."""
    arms: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        if (
            by_row[id(r)] == "rate"
            and "slo_met" in r.load
            and r.conditions.request_rate is not None
        ):
            arms.setdefault((r.conditions.drafter, r.conditions.k), []).append(r)
    out = []
    for (drafter, k), members in sorted(arms.items(), key=str):
        met = None
        for r in sorted(members, key=lambda r: r.conditions.request_rate or 0.0):
            if not r.load.get("slo_met"):
                break
            met = r.conditions.request_rate
        named = arm(drafter, k, none="no drafter")
        what = (
            f"meets the SLO up to {number(met)} req/s"
            if met is not None
            else "misses the SLO at the lightest load"
        )
        out.append(f"- {named} {what} {table_link('rate')}")
    return out


def _identity_lines(rows: Sequence[Row]) -> list[str]:
    """A line per workload whose greedy output changed with a drafter, with the engine's reason; a
    run that accepted no draft at all and still differs shows that the verify batch, not the
    drafts, changed the text."""
    differs = [r for r in rows if r.metrics.output_identical is False]
    out = []
    for workload in _values_of(differs, "workload"):
        these = [r for r in differs if r.conditions.workload == workload]
        arms = ", ".join(sorted({arm_of(r) for r in these}))
        line = f"- {code_span(number(workload))}: greedy output (temperature 0) **differs** from no drafter's with {arms}"
        settings = settings_for(str(these[0].conditions.runtime))
        if settings is not None and settings.batch_variant_why:
            line += f"; {settings.batch_variant_why}"
        none_accepted = [r for r in these if r.metrics.acceptance_rate == 0]
        if none_accepted:
            line += (
                f"; {arm_of(none_accepted[0])} accepted no draft at all and differs too, so the "
                "difference is the verify pass's arithmetic, not a drafted token"
            )
        out.append(line)
    return out


def _values_of(rows: Sequence[Row], condition: str) -> list[Any]:
    seen: list[Any] = []
    for r in rows:
        v = r.conditions.get(condition)
        if v not in seen:
            seen.append(v)
    return seen


def _trouble(
    rows: Sequence[Row], failures: Sequence[Any], records: Sequence[RunRecord] = ()
) -> list[str]:
    out = []
    for status in ("refused", "failed", "skipped"):
        n = sum(1 for f in failures if f.status == status)
        if n:
            out.append(f"- {n} run(s) {status} [list](#{anchor(TITLES['failures'])})")
    measurements = [m for r in records for m in r.measurements]
    partial = sum(1 for m in measurements if m.partial)
    if partial:
        out.append(f"- {partial} figure(s) **partial**: kept from runs that stopped part-way")
    dirty = sum(1 for m in measurements if m.contaminated)
    if dirty:
        out.append(
            f"- {dirty} figure(s) **contaminated**: the engine's log shows a compile inside a timed window"
        )
    bound = sum(1 for r in rows if (r.client or {}).get("bound"))
    if bound:
        out.append(
            f"- {bound} figure(s) **client-bound**: the measuring client, not the server, set the pace"
        )
    return out
