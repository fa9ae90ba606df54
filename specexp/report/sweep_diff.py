"""Two sweeps side by side: did the change make it faster?

`python -m specexp.report --compare BEFORE AFTER` takes two folders of records, or a folder and a
committed results.jsonl, and answers the question a repository's maintainer asks of an engine
upgrade, a flag or a drafter checkpoint:

- **The change** is what differs between the two sweeps as a whole: a condition whose values in
  BEFORE and AFTER have none in common (`hardware` h200 → h100, `runtime_version` 0.26 → 0.27).
  Provenance (git sha, dates, specexp version) is named beside it but changes nothing.
- **Pairs** are measurements whose other conditions are all equal (`value_key`, the vocabulary's
  equality). For each pair, every headline metric both have is shown as AFTER ÷ BEFORE, with its
  verdict: beyond noise when the 95 % bootstrap interval of AFTER ÷ BEFORE over both sides' runs
  leaves out 1 (specexp.stats.bootstrap: server starts where there were several, else windows),
  within noise when it holds 1, and "one repeat" when a side has fewer than two runs (nothing to
  judge by). A results.jsonl written before lines held their windows' values is judged by the
  rule it was written under: the two (min–max) spreads overlap.
- **Unpaired** measurements are listed with why: the conditions in which the nearest measurement
  of the other sweep differs. A condition that differs for some pairs only is a confounder, not the
  change, and stops those pairs.
- `--fail-if-slower PCT` exits 1 when a paired headline metric is worse by more than PCT % and
  not within noise, so a repository's CI can gate on it.
- A comparison of nothing (a side with no records or no finished measurement, no pair, or no
  headline metric in any pair) exits 2 with one line: a mistyped baseline path never passes a gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specexp.check.judgments import judgments, spreads_overlap
from specexp.record import LineError, ResultLine, find_records, read_result_lines, results_lines
from specexp.record.escape import Markdown, cell, code_span
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import header, number
from specexp.spec.errors import SpecError
from specexp.spec.metric_defs import COMPARED
from specexp.spec.vocabulary import CONDITIONS, METRICS, value_key
from specexp.stats.bootstrap import holds_one, ratio_interval

HEADLINE = COMPARED
"""The metrics a comparison judges, where both measurements have them."""
NOT_PAIRED_ON = ("runtime_version",)
"""Conditions that name a build, not a setting: they are the change when they differ as a whole,
and never stop a pair otherwise (a rebuilt engine of the same version string)."""


@dataclass(frozen=True)
class Side:
    """One sweep: its measurements (results.jsonl lines, with spreads) and its provenance."""

    name: str
    lines: list[ResultLine]
    provenance: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Delta:
    metric: str
    before: float
    after: float
    ratio: float
    verdict: str
    """"faster", "slower" (beyond noise or with no spread to judge by), "same", "within noise"."""
    noise_known: bool
    interval: tuple[float, float] | None = None
    """The ratio's 95 % bootstrap interval over both sides' runs (None: fewer than two a side, or
    a results.jsonl without its windows' values)."""


@dataclass(frozen=True)
class Pair:
    before: ResultLine
    after: ResultLine
    deltas: list[Delta]


@dataclass(frozen=True)
class Comparison:
    before: Side
    after: Side
    change: dict[str, tuple[list[Any], list[Any]]]
    pairs: list[Pair]
    unpaired: list[tuple[str, ResultLine, str]]
    """(which side, the line, why it has no partner)."""

    def slower(self, pct: float) -> list[tuple[Pair, Delta]]:
        """Paired headline metrics worse by more than `pct` % and not within noise."""
        out = []
        for pair in self.pairs:
            for d in pair.deltas:
                worse = (
                    d.ratio < 1 - pct / 100
                    if METRICS[d.metric].better == "higher"
                    else d.ratio > 1 + pct / 100
                )
                if worse and d.verdict != "within noise":
                    out.append((pair, d))
        return out


def read_side(source: Path) -> Side:
    """A folder of records (read and judged as the report reads them) or a results.jsonl file."""
    if source.is_file():
        try:
            return Side(str(source), read_result_lines(source))
        except LineError as err:
            raise SpecError(str(source), f"line {err.number}", err.problem) from None
    found = find_records([source])
    provenance: dict[str, list[str]] = {}
    for _, record in found:
        p = record.provenance
        for key, value in (
            ("git sha", p.git_sha),
            ("specexp", p.specexp_version),
            ("host", p.host),
            ("started", (p.started_at or "")[:10] or None),
        ):
            if value and value not in provenance.setdefault(key, []):
                provenance[key].append(value)
    return Side(str(source), results_lines([r for _, r in found], judgments(found)), provenance)


def compare(before: Side, after: Side) -> Comparison:
    a = [x for x in before.lines if x.measured]
    b = [x for x in after.lines if x.measured]
    change = {}
    for name in CONDITIONS:
        va = {value_key(x.conditions.get(name)): x.conditions.get(name) for x in a}
        vb = {value_key(x.conditions.get(name)): x.conditions.get(name) for x in b}
        if va and vb and not set(va) & set(vb):
            change[name] = (list(va.values()), list(vb.values()))
    keys = [c for c in CONDITIONS if c not in change and c not in NOT_PAIRED_ON]
    key = lambda x: tuple(value_key(x.conditions.get(c)) for c in keys)  # noqa: E731
    by_key: dict[tuple[Any, ...], list[ResultLine]] = {}
    for x in b:
        by_key.setdefault(key(x), []).append(x)
    pairs, unpaired, used = [], [], set()
    for x in a:
        partners = [y for y in by_key.get(key(x), []) if id(y) not in used]
        if not partners:
            unpaired.append(("before", x, _why(x, b, keys)))
            continue
        used.add(id(partners[0]))
        pairs.append(Pair(x, partners[0], deltas(x, partners[0])))
    unpaired += [("after", y, _why(y, a, keys)) for y in b if id(y) not in used]
    return Comparison(before, after, change, pairs, unpaired)


def refuse_empty(c: Comparison) -> None:
    """A comparison with nothing in it is a mistake, not a result (a mistyped path, the wrong
    folder): a gate that passed it would pass on nothing. Raise a `SpecError` saying why."""
    for which, side in (("BEFORE", c.before), ("AFTER", c.after)):
        finished = [x for x in side.lines if x.measured]
        if not side.lines:
            empty = (
                "nothing in this file" if Path(side.name).is_file() else "no result.json under it"
            )
            raise SpecError(side.name, f"--compare {which}", f"no records ({empty})")
        if not finished:
            raise SpecError(
                side.name,
                f"--compare {which}",
                f"none of its {len(side.lines)} measurement(s) finished with metrics",
            )
    where = f"{c.before.name}, {c.after.name}"
    if not c.pairs:
        _, line, why = c.unpaired[0]
        raise SpecError(
            where,
            "--compare",
            f"no pair of comparable measurements: no two share their conditions besides the "
            f"change (run {line.run_id}: {why})",
        )
    if not any(p.deltas for p in c.pairs):
        raise SpecError(
            where,
            "--compare",
            f"{len(c.pairs)} pair(s) but no headline metric in common ({', '.join(HEADLINE)})",
        )


def _why(line: ResultLine, others: Sequence[ResultLine], keys: Sequence[str]) -> str:
    """The conditions in which the nearest measurement of the other sweep differs."""
    if not others:
        return "the other sweep has no finished measurement"

    def differing(o: ResultLine) -> list[str]:
        return [
            c for c in keys if value_key(line.conditions.get(c)) != value_key(o.conditions.get(c))
        ]

    nearest = min((differing(o) for o in others), key=len)
    return "nearest measurement differs in " + ", ".join(
        f"{c} ({number(line.conditions.get(c))})" for c in nearest
    )


def deltas(a: ResultLine, b: ResultLine) -> list[Delta]:
    out = []
    for m in HEADLINE:
        x = a.metrics.get(m) if a.metrics is not None else None
        y = b.metrics.get(m) if b.metrics is not None else None
        if not isinstance(x, (int, float)) or not isinstance(y, (int, float)) or not x:
            continue
        windowed = a.samples is not None and b.samples is not None  # else lines of before
        bounds = ratio_interval(b.runs(m), a.runs(m)) if windowed else None
        noise = (
            holds_one(bounds)
            if windowed
            else spreads_overlap((a.spread or {}).get(m), (b.spread or {}).get(m))
        )
        higher = METRICS[m].better == "higher"
        if y == x:
            verdict = "same"
        elif noise:
            verdict = "within noise"
        else:
            verdict = "faster" if (y > x) == higher else "slower"
        out.append(Delta(m, float(x), float(y), y / x, verdict, noise is not None, bounds))
    return out


def blocks(c: Comparison, pct: float | None = None) -> list[Block]:
    """The comparison as report blocks (Markdown and HTML, as the report is rendered)."""
    out: list[Block] = []
    if c.change:
        change = "; ".join(
            f"{code_span(name)} {cell(', '.join(map(number, was)))} → {cell(', '.join(map(number, now)))}"
            for name, (was, now) in c.change.items()
        )
        out.append(Paragraph(Markdown(f"**The change**: {change}.")))
    else:
        out.append(
            Paragraph(
                Markdown(
                    "**The change**: none in the conditions: both sweeps measured the same setups."
                )
            )
        )
    prov = [
        f"{cell(k)} {cell(', '.join(c.before.provenance.get(k, ['—'])))} → {cell(', '.join(c.after.provenance.get(k, ['—'])))}"
        for k in ("git sha", "specexp", "host", "started")
        if c.before.provenance.get(k) != c.after.provenance.get(k)
    ]
    if prov:
        out.append(
            Paragraph(
                Markdown(
                    "Provenance (named, never a reason to stop a pair): " + "; ".join(prov) + "."
                )
            )
        )
    verdicts = [d.verdict for p in c.pairs for d in p.deltas]
    summary = ", ".join(
        f"{verdicts.count(v)} {v}"
        for v in ("faster", "slower", "within noise", "same")
        if verdicts.count(v)
    )
    out.append(
        Paragraph(
            Markdown(
                f"{len(c.pairs)} pair(s), {len(c.unpaired)} measurement(s) unpaired; "
                f"headline metrics: {summary or 'none in common'}."
            )
        )
    )
    if pct is not None:
        worse = c.slower(pct)
        out.append(
            Paragraph(
                Markdown(
                    f"**Gate** (`--fail-if-slower {pct:g}`): "
                    + (
                        f"{len(worse)} metric(s) worse by more than {pct:g} % "
                        "and not within noise: fails."
                        if worse
                        else "passes."
                    )
                )
            )
        )
    shown = [
        name
        for name in CONDITIONS
        if name not in c.change
        and len({value_key(p.before.conditions.get(name)) for p in c.pairs}) > 1
    ]
    if c.pairs:
        out.append(Heading("Pairs"))
        body = []
        for p in c.pairs:
            for d in p.deltas:
                body.append(
                    [
                        *(number(p.before.conditions.get(name)) for name in shown),
                        header(d.metric),
                        number(d.before, d.metric),
                        number(d.after, d.metric),
                        f"{d.ratio:.3f}×"
                        + (f" [{d.interval[0]:.3f}–{d.interval[1]:.3f}]" if d.interval else ""),
                        d.verdict
                        if d.noise_known or d.verdict == "same"
                        else f"{d.verdict} (one repeat)",
                    ]
                )
        out.append(
            TableBlock(
                [*shown, "metric", "before", "after", "after ÷ before", "verdict"],
                body,
                align=["l"] * len(shown) + ["l", "r", "r", "r", "l"],
            )
        )
    if c.unpaired:
        out.append(Heading("Not paired"))
        out.append(
            TableBlock(
                ["sweep", "run", "why"],
                [[side, code_span(line.run_id), cell(why)] for side, line, why in c.unpaired],
            )
        )
    return out
