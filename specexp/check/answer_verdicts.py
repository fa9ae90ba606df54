"""Did the drafter change what the model answers? Judged when records are read, as
output_identical is (docs/answers.md):

- a sampling workload's run (temperature > 0, `workload.samples`): its sampled tokens against its
  drafter=none baseline's, prompt by prompt (specexp.stats.sampled);
- a task run (`workload.task`): its item scores against the baseline's, item by item
  (specexp.stats.paired).

The baseline is the vocabulary's one baseline rule (`is_baseline_of`); the permutation and
bootstrap seeds come from the two run ids, so the same records give the same verdict.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from specexp.record import Measurement, RunRecord
from specexp.spec.vocabulary import Baselines
from specexp.stats.paired import PairedScores, compare_scores
from specexp.stats.sampled import SampledComparison, compare_samples


@dataclass(frozen=True)
class AnswerCheck:
    baseline_run_id: str
    sampled: SampledComparison | None = None
    scores: PairedScores | None = None

    @property
    def what(self) -> str:
        return "sampled outputs" if self.sampled is not None else "task score"

    @property
    def verdict(self) -> str:
        if self.sampled is not None:
            return self.sampled.verdict
        return self.scores.verdict if self.scores is not None else ""

    @property
    def details(self) -> str:
        """The figures behind the verdict, in one parenthesis's words (the sweep's closing lines,
        the report's findings)."""
        if self.sampled is not None:
            s = self.sampled
            shift = "-" if s.detectable_shift is None else f"{100 * s.detectable_shift:.1f} pt"
            return f"p {s.p_value:.4f}, {s.samples[1]:,} samples, detectable {shift}"
        if self.scores is None:
            return ""
        p = self.scores
        return (
            f"{100 * p.drafter_score:.1f} vs {100 * p.baseline_score:.1f}, "
            f"{100 * p.difference:+.1f} points [{100 * p.low:+.1f}, {100 * p.high:+.1f}], "
            f"McNemar p {p.mcnemar_p:.3f}, {p.items:,} items"
        )


_DONE: dict[tuple[str, int, str], AnswerCheck] = {}
"""Checks already made in this process (records of finished runs do not change)."""


def pair_seed(run_id: str, baseline_run_id: str) -> int:
    blob = f"{run_id}|{baseline_run_id}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big")


def _by_prompt(m: Measurement) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for rid in sorted(m.sampled):
        out.setdefault(m.sampled[rid].prompt, []).append(m.sampled[rid].tokens)
    return out


def _check(m: Measurement, base: Measurement, run_id: str, base_id: str) -> AnswerCheck | None:
    seed = pair_seed(run_id, base_id)
    if m.sampled and base.sampled:
        positions = max(len(s.tokens) for s in m.sampled.values())
        tested = compare_samples(_by_prompt(base), _by_prompt(m), positions=positions, seed=seed)
        return AnswerCheck(base_id, sampled=tested)
    if m.task_items and base.task_items:
        scores = compare_scores(
            {k: v.score for k, v in base.task_items.items()},
            {k: v.score for k, v in m.task_items.items()},
            seed=seed,
        )
        return AnswerCheck(base_id, scores=scores) if scores else None
    return None


def checked_runs(records: Sequence[RunRecord]) -> list[tuple[RunRecord, AnswerCheck]]:
    """Each checked drafter run with its check, in run-id order."""
    by_id = {r.run_id: r for r in records}
    return [(by_id[run_id], check) for (run_id, _), check in sorted(answer_checks(records).items())]


def answer_checks(records: Sequence[RunRecord]) -> dict[tuple[str, int], AnswerCheck]:
    """(run id, measurement index) -> its check, for every measurement of a drafter run that
    sampled or scored answers and has a baseline that did too."""
    baselines = Baselines(
        (r for r in records if r.status == "ok"), lambda r: r.conditions.model_dump()
    )
    out: dict[tuple[str, int], AnswerCheck] = {}
    for record in records:
        if record.status != "ok" or record.conditions.drafter in (None, "none"):
            continue
        base = baselines.of(record.conditions.model_dump())
        if base is None or not base.measurements:
            continue
        for i, m in enumerate(record.measurements):
            key = (record.run_id, i, base.run_id)
            if key not in _DONE:
                check = _check(m, base.measurements[0], record.run_id, base.run_id)
                if check is None:
                    continue
                _DONE[key] = check
            out[(record.run_id, i)] = _DONE[key]
    return out
