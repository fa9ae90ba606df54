"""The report's first section, "Findings": what the records say, written by rules, not by hand.

- per workload, setup and concurrency, the fastest configuration and its speedup over the
  drafter=none baseline (over the metric its table divides: specexp.check.judgments), with its
  spread, or "within noise" when the spreads of the two overlap;
- where speculation stops paying: in k (a drafter's best k, and the larger k that falls back),
  and in concurrency (the first level at which an arm is slower than no drafter);
- the highest request rate that meets the SLO, per arm, where one was set;
- what was refused, failed, skipped, partial, contaminated or client-bound;
- what the answer checks say (the sampled outputs' and task scores' verdicts);
- which figures are simulated.

Every finding links to the section whose table holds its numbers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from specexp.check.answers import checked_runs
from specexp.check.judgments import SPEEDUP_METRIC, pass_cost_steps, sections, within_noise
from specexp.record import RunRecord
from specexp.record.escape import Markdown, cell, code_span
from specexp.report.answers import TITLE as ANSWERS
from specexp.report.blocks import Block, Heading, Paragraph
from specexp.report.format import arm, number
from specexp.report.tables import DRAFTER_KEYS, TITLES, Row, baseline
from specexp.spec.vocabulary import CONDITIONS, METRICS, value_key

MAX_FASTEST = 12
"""Fastest-configuration lines at most; the rest are in the tables."""


def anchor(title: str) -> str:
    """The id GitHub and the HTML report give a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _link(section: str) -> str:
    return f"[table](#{anchor(TITLES[section])})"


def _arm(row: Row) -> str:
    return arm(row.conditions.drafter, row.conditions.k)


def _speedup(row: Row, base: Row, metric: str) -> tuple[float, bool | None] | None:
    ours, theirs = row.metrics.get(metric), base.metrics.get(metric)
    if not ours or not theirs:
        return None
    return ours / theirs, within_noise(row.spread.get(metric), base.spread.get(metric))


def _setup(base: Row, bases: Sequence[Row]) -> str:
    """Where a finding holds: the baseline's workload and concurrency, and what else sets it apart
    from the other baselines (the conditions that vary among them)."""
    skip = {
        *DRAFTER_KEYS,
        "runtime_version",
        "repeats",
        "workload",
        "concurrency",
        "prompt_tokens",
        "output_tokens",
    }
    varying = [
        c
        for c in CONDITIONS
        if c not in skip and len({value_key(b.conditions.get(c)) for b in bases}) > 1
    ]
    where = f"{code_span(number(base.conditions.workload))} at concurrency {number(base.conditions.concurrency or 1)}"
    return ", ".join([where, *(f"{c} {cell(number(base.conditions.get(c)))}" for c in varying)])


def _ranking(ranked: list[tuple[float, str, str]]) -> list[str]:
    """Workloads ordered by their best single-stream speedup, when more than one workload ran and
    each workload has one setup (several setups per workload are ranked in their own lines)."""
    workloads = [w for _, w, _ in ranked]
    if len(set(workloads)) < 2 or len(set(workloads)) != len(workloads):
        return []
    order = sorted(ranked, key=lambda item: -item[0])
    said = " > ".join(f"{code_span(number(w))} {ratio:.2f}× ({named})" for ratio, w, named in order)
    return [f"- Workloads by their best single-stream speedup: {said}"]


def _pass_cost(run: Row, base: Row) -> str:
    """ ", 4.85 tokens per pass at 5.59 plain decode steps a pass": why a drafter pays or not."""
    steps = pass_cost_steps(run, base)
    per_pass = run.metrics.tokens_per_pass
    if steps is None or per_pass is None:
        return ""
    return f", {per_pass:.2f} tokens per pass at {steps:.2f} plain decode steps a pass"


def findings_section(
    rows: Sequence[Row], failures: Sequence[Any], records: Sequence[RunRecord] = ()
) -> list[Block]:
    lines: list[str] = []
    kinds = sections(rows)
    by_row = {id(r): s for r, s in zip(rows, kinds, strict=True)}
    bases = [r for r in rows if r.conditions.drafter == "none" and by_row[id(r)] in SPEEDUP_METRIC]
    fastest, stops = [], []
    ranked: list[tuple[float, str, str]] = []
    for base in bases:
        section = by_row[id(base)]
        metric = SPEEDUP_METRIC[section]
        arms = [
            (r, s)
            for r in rows
            if by_row[id(r)] == section
            and r.conditions.drafter != "none"
            and baseline(r, [base]) is base
            and (s := _speedup(r, base, metric)) is not None
        ]
        if not arms:
            continue
        best, (ratio, noise) = max(arms, key=lambda item: item[1][0])
        where = _setup(base, bases)
        spread = best.spread.get(metric)
        shown = f"{number(best.metrics.get(metric), metric)}"
        if spread and spread[0] != spread[1]:
            shown += f" ({number(spread[0], metric)}–{number(spread[1], metric)})"
        unit = METRICS[metric].unit
        versus = f"({shown} vs {number(base.metrics.get(metric), metric)} {unit})"
        cost = _pass_cost(best, base)
        if noise:
            said = f"fastest {_arm(best)}, **{ratio:.2f}×**, within noise of no drafter"
        elif ratio > 1:
            said = f"fastest {_arm(best)}, **{ratio:.2f}×** faster than no drafter"
        elif round(ratio, 2) >= 1.0:
            said = f"**no drafter is faster**: the best, {_arm(best)}, is level with none ({ratio:.2f}×)"
        else:  # no drafter pays: say so, and by how much the best of them is slower
            said = (
                f"**no drafter is fastest**: the best, {_arm(best)}, is **{1 / ratio:.2f}× slower** "
                f"({ratio:.2f}×)"
            )
        fastest.append(f"- {where}: {said} in `{metric}` {versus}{cost} {_link(section)}")
        stops += _k_crossover(arms, where, section)
        if section == "decode" and (base.conditions.concurrency or 1) == 1:
            ranked.append((ratio, str(base.conditions.workload), _arm(best)))
    lines += _ranking(ranked)
    lines += fastest[:MAX_FASTEST]
    if len(fastest) > MAX_FASTEST:
        lines.append(f"- … {len(fastest) - MAX_FASTEST} more setups in the tables below")
    lines += stops[:MAX_FASTEST] + _concurrency_crossover(rows, by_row)
    lines += _slo_lines(rows, by_row)
    lines += _answer_lines(records)
    lines += _identity_lines(rows)
    lines += _trouble(rows, failures, records)
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


def _k_crossover(
    arms: Sequence[tuple[Row, tuple[float, bool | None]]], where: str, section: str
) -> list[str]:
    """Per drafter with several k: its best k, and the largest k when that gives back speed."""
    out = []
    drafters = sorted({r.conditions.drafter for r, _ in arms})
    for drafter in drafters:
        ks = sorted(
            (
                (r.conditions.k, s[0])
                for r, s in arms
                if r.conditions.drafter == drafter and r.conditions.k
            ),
            key=lambda x: x[0],
        )
        if len(ks) < 2:
            continue
        best_k, best = max(ks, key=lambda x: x[1])
        last_k, last = ks[-1]
        if last_k != best_k and last < best * 0.95:
            out.append(
                f"- {where}: {code_span(drafter)} pays most at k={best_k} ({best:.2f}×); k={last_k} "
                f"falls back to {last:.2f}× {_link(section)}"
            )
    return out


def _concurrency_crossover(rows: Sequence[Row], by_row: dict[int, str]) -> list[str]:
    """Per drafter arm under concurrency: the first level at which it is slower than no drafter."""
    out = []
    arms: dict[tuple[Any, ...], list[tuple[int, float]]] = {}
    for r in rows:
        if by_row[id(r)] != "concurrency" or r.conditions.drafter == "none":
            continue
        base = baseline(r, rows)
        s = _speedup(r, base, "aggregate_tps") if base is not None else None
        if s is not None:
            key = (
                r.conditions.drafter,
                r.conditions.k,
                r.conditions.workload,
                r.conditions.hardware,
            )
            arms.setdefault(key, []).append((int(r.conditions.concurrency or 1), s[0]))
    for (drafter, k, workload, _), levels in sorted(arms.items(), key=lambda kv: str(kv[0])):
        levels.sort()
        loss = next(((c, x) for c, x in levels if x < 1), None)
        if loss is not None and len(levels) > 1:
            out.append(
                f"- {cell(number(workload))}: {arm(drafter, k)} stops paying at concurrency {loss[0]} ({loss[1]:.2f}× "
                f"`aggregate_tps`) {_link('concurrency')}"
            )
    return out[:MAX_FASTEST]


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
        for r in sorted(members, key=lambda r: r.conditions.request_rate):
            if not r.load.get("slo_met"):
                break
            met = r.conditions.request_rate
        named = arm(drafter, k, none="no drafter")
        what = (
            f"meets the SLO up to {number(met)} req/s"
            if met is not None
            else "misses the SLO at the lightest load"
        )
        out.append(f"- {named} {what} {_link('rate')}")
    return out


BATCH_VARIANT = {
    "llamacpp": "llama.cpp verifies a draft as one batch of k + 1 tokens, and its CPU kernels "
    "round a batch differently from one token at a time, so near-ties in the target's logits can "
    "flip (docs/engines.md 7.4)",
    "vllm": "vLLM verifies a draft as one batched pass of k + 1 tokens, and on the CPU its kernels "
    "round that batch differently from a one-token step, so near-ties in the target's logits can "
    "flip (docs/engines.md 7.2)",
}
"""Why an engine's greedy output can change with drafting although its verification is exact."""


def _identity_lines(rows: Sequence[Row]) -> list[str]:
    """A line per workload whose greedy output changed with a drafter, with the engine's reason; a
    run that accepted no draft at all and still differs shows that the verify batch, not the
    drafts, changed the text."""
    differs = [r for r in rows if r.metrics.output_identical is False]
    out = []
    for workload in _values_of(differs, "workload"):
        these = [r for r in differs if r.conditions.workload == workload]
        arms = ", ".join(sorted({_arm(r) for r in these}))
        line = f"- {code_span(number(workload))}: greedy output (temperature 0) **differs** from no drafter's with {arms}"
        runtime = str(these[0].conditions.runtime)
        if runtime in BATCH_VARIANT:
            line += f"; {BATCH_VARIANT[runtime]}"
        none_accepted = [r for r in these if r.metrics.acceptance_rate == 0]
        if none_accepted:
            line += (
                f"; {_arm(none_accepted[0])} accepted no draft at all and differs too, so the "
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
