"""The read-time judgments of a set of records, as data: what the report shows beside each
measurement and results.jsonl carries for pandas, polars or duckdb.

- `output_identical`: the completions equal the baseline's (temperature 0; specexp.check.identity);
- `baseline_run_id`: the drafter=none measurement it is compared with (the vocabulary's one
  baseline rule), and `speedup_vs_baseline`: its `speedup_metric` over the baseline's, as the
  report's table of its section divides: `decode_tps` in the decode section (a run of single
  streams), `aggregate_tps` in the concurrency section (a run that measured more than one
  stream at once); the prefill, prefix-cache and open-loop sections show no speedup, so their
  measurements have none. `speedup_interval`: the speedup's 95 % bootstrap interval over both
  sides' runs (specexp.stats.bootstrap: server starts where there were several, else windows), and
  `speedup_within_noise`: that interval holds 1, so the difference is not beyond what a rerun
  moves. `pass_cost_steps`: what one
  speculative pass costs in plain decode steps of the baseline (tokens_per_pass x baseline
  decode_tps / decode_tps): a drafter pays when it is below tokens_per_pass.
- the answer checks (specexp.check.answer_verdicts, docs/answers.md): `sampled_verdict`,
  `sampled_p_value` and `sampled_detectable_shift` of a sampling workload's drafter run against its
  baseline; `score_difference` (drafter - baseline), `score_interval` (its paired bootstrap 95 %
  interval), `mcnemar_p` and `score_verdict` of a task run. Null where there is no such check.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specexp.check.answer_verdicts import AnswerCheck, answer_checks
from specexp.check.runs import Run, runs_of
from specexp.record import Judgments, RunRecord
from specexp.record.kinds import measurement_kinds
from specexp.spec.vocabulary import Baselines
from specexp.stats.bootstrap import Runs, holds_one, ratio_interval

SPEEDUP_METRIC = {"decode": "decode_tps", "concurrency": "aggregate_tps"}
"""The throughput a speedup divides, in the sections that show one."""


def within_noise(ours: Runs | None, theirs: Runs | None) -> bool | None:
    """Whether the 95 % bootstrap interval of ours / theirs holds 1 (specexp.stats.bootstrap), so
    that their difference is not beyond what rerunning moves; None with fewer than two runs on a
    side (nothing to judge by). The one noise rule of the report, its findings, results.jsonl and
    `--compare`."""
    return holds_one(ratio_interval(ours, theirs))


def spreads_overlap(ours: Sequence[float] | None, theirs: Sequence[float] | None) -> bool | None:
    """The noise rule of results.jsonl lines written before they held their windows' values: the
    two (min-max) spreads overlap; None without a spread on either side."""
    if not ours or not theirs or (ours[0] == ours[1] and theirs[0] == theirs[1]):
        return None
    return bool(ours[0] <= theirs[1] and theirs[0] <= ours[1])


def pass_cost_steps(run: Run, base: Run | None) -> float | None:
    """What one speculative pass (drafting plus verifying) costs, in plain decode steps of the
    baseline: tokens_per_pass x baseline decode_tps / decode_tps. A drafter pays when this is
    below its tokens per pass; None without both decode rates and acceptance counters."""
    if base is None:
        return None
    per_pass, ours = run.metrics.tokens_per_pass, run.metrics.decode_tps
    theirs = base.metrics.decode_tps
    if not per_pass or not ours or not theirs:
        return None
    return per_pass * theirs / ours


def answer_judgments(check: AnswerCheck | None) -> dict[str, Any]:
    sampled = check.sampled if check else None
    scores = check.scores if check else None
    return {
        "sampled_verdict": sampled.verdict if sampled else None,
        "sampled_p_value": sampled.p_value if sampled else None,
        "sampled_detectable_shift": sampled.detectable_shift if sampled else None,
        "score_difference": scores.difference if scores else None,
        "score_interval": [scores.low, scores.high] if scores else None,
        "mcnemar_p": scores.mcnemar_p if scores else None,
        "score_verdict": scores.verdict if scores else None,
    }


def judgments(found: Sequence[tuple[Path, RunRecord]]) -> dict[tuple[str, int], Judgments]:
    """(run id, measurement index) -> its judgments, for every measurement of a finished run."""
    runs = runs_of(found, partial=True)
    answers = answer_checks([r for _, r in found])
    out: dict[tuple[str, int], Judgments] = {}
    bases = Baselines(runs, lambda r: r.conditions)
    for run, section in zip(runs, measurement_kinds(runs), strict=True):
        index = int(run.id.split("#", 1)[1]) if "#" in run.id else 0
        metric = SPEEDUP_METRIC.get(section)
        base = bases.of(run.conditions)
        if metric is None:
            base = None  # a section without speedups: the baseline is still found by the report's tables
        ours, theirs = (
            (run.metrics.get(metric), base.metrics.get(metric)) if base and metric else (None, None)
        )
        speedup = ours / theirs if ours and theirs else None
        bounds = (
            None
            if speedup is None or metric is None or base is None
            else ratio_interval(run.runs(metric), base.runs(metric))
        )
        out[(run.run_id, index)] = Judgments(
            output_identical=run.metrics.output_identical,
            baseline_run_id=base.run_id if base else None,
            speedup_metric=metric if base else None,
            speedup_vs_baseline=speedup,
            speedup_within_noise=holds_one(bounds),
            speedup_interval=list(bounds) if bounds else None,
            pass_cost_steps=pass_cost_steps(run, base),
            **answer_judgments(answers.get((run.run_id, index))),
        )
    return out
