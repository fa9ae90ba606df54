"""The report's "Answers with and without the drafter" section: the sampled-output verdicts and
the paired task scores of the runs whose speed the tables above show (docs/answers.md)."""

from __future__ import annotations

from collections.abc import Sequence

from specexp.check.answer_verdicts import answer_checks
from specexp.record import RunRecord
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, cell, code_span, number
from specexp.spec.arms import arm_label
from specexp.stats.sampled import ALPHA, MAX_SHIFT, POWER

TITLE = "Answers with and without the drafter"


def _setup(record: RunRecord) -> str:
    return arm_label(record.conditions.drafter, record.conditions.k)


def answers_section(records: Sequence[RunRecord]) -> list[Block]:
    checks = answer_checks(records)
    if not checks:
        return []
    by_id = {r.run_id: r for r in records}
    sampled, scored = [], []
    for (run_id, _), check in sorted(checks.items()):
        record = by_id[run_id]
        c = record.conditions
        run = [code_span(run_id), cell(_setup(record)), code_span(check.baseline_run_id)]
        if check.sampled is not None:
            s = check.sampled
            shift = "—" if s.detectable_shift is None else f"{100 * s.detectable_shift:.1f} pt"
            sampled.append(
                [
                    *run,
                    cell(f"{c.temperature:g}"),
                    cell(f"{s.samples[1]:,} / {s.samples[0]:,} ({s.prompts} prompts)"),
                    cell(f"{s.positions}"),
                    cell(f"{s.statistic:.1f} (df {s.df})"),
                    cell(f"{s.p_value:.4f}"),
                    cell(shift),
                    Markdown(f"**{s.verdict}**"),
                ]
            )
        if check.scores is not None:
            p = check.scores
            scored.append(
                [
                    *run,
                    cell(number(c.workload)),
                    cell(f"{p.items:,}"),
                    cell(f"{100 * p.drafter_score:.1f} vs {100 * p.baseline_score:.1f}"),
                    cell(f"{100 * p.difference:+.1f} [{100 * p.low:+.1f}, {100 * p.high:+.1f}]"),
                    cell(f"{p.drafter_only} / {p.baseline_only}"),
                    cell(f"{p.mcnemar_p:.3f}"),
                    Markdown(f"**{p.verdict}**"),
                ]
            )
    blocks: list[Block] = [Heading(TITLE)]
    if sampled:
        blocks.append(
            Paragraph(
                Markdown(
                    "Sampled outputs at temperature > 0, the drafter's against its baseline's "
                    "(docs/answers.md section 1): each position's next token given the tokens "
                    "before it, a permutation test within each prompt. A verdict of "
                    f"*differs* has a false-alarm rate of {ALPHA:g}; *detectable* is the shift of "
                    f"probability onto one token this N catches {POWER:.0%} of the time, and over "
                    f"{100 * MAX_SHIFT:g} points the verdict is *not enough samples*."
                )
            )
        )
        blocks.append(
            TableBlock(
                [
                    "run",
                    "drafter",
                    "baseline",
                    "temperature",
                    "samples (drafter / baseline)",
                    "positions",
                    "X²",
                    "p",
                    "detectable",
                    "verdict",
                ],
                sampled,
            )
        )
    if scored:
        blocks.append(
            Paragraph(
                Markdown(
                    "Task scores through lm-evaluation-harness, paired item by item "
                    "(docs/answers.md section 2): the difference with its paired bootstrap 95 % "
                    "interval, the items right with the drafter only / without it only, and "
                    "McNemar's exact p. *Within noise*: the interval holds 0."
                )
            )
        )
        blocks.append(
            TableBlock(
                [
                    "run",
                    "drafter",
                    "baseline",
                    "workload",
                    "items",
                    "score, % (drafter vs baseline)",
                    "difference, points [95 %]",
                    "right only with / without",
                    "McNemar p",
                    "verdict",
                ],
                scored,
            )
        )
    return blocks
