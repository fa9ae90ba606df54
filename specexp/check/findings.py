"""Findings: what a check expected, what it found, how bad it is, and what to do.

The rules are fixed data (`RULES`); every check appends findings to a list and the caller
reports them all at the end, never stopping at the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    name: str
    severity: str
    summary: str
    recommendation: str


RULES: Mapping[str, Rule] = MappingProxyType(
    {
        r.name: r
        for r in (
            Rule(
                "confounder",
                "error",
                "a condition that can move the metric differs outside the comparison's `vary`",
                "compare figures that share it, or add it to `vary` if it is what you mean to study",
            ),
            Rule(
                "metric_mismatch",
                "error",
                "the two figures use different metric definitions",
                "compare the same metric (e2e with e2e, aggregate with aggregate)",
            ),
            Rule(
                "unknown_condition",
                "warning",
                "a condition that can move the metric is stated for one figure only",
                "find the other figure's value in its source, or say the comparison is unverified",
            ),
            Rule(
                "unstated_condition",
                "info",
                "conditions that can move the metric are stated for neither figure (one finding lists them)",
                "the authors may share it; state it where the sources say it",
            ),
            Rule(
                "score_beyond_noise",
                "warning",
                "two task scores differ by more than their item counts allow (an unpaired 95 % interval of the difference leaves out 0; docs/answers.md section 3)",
                "the drafter (or whatever differs) changed answers: pair the runs item by item to see which",
            ),
            Rule(
                "score_within_noise",
                "info",
                "two task scores are within noise of each other at their item counts (the 95 % interval of the difference holds 0)",
                "the interval says how large a change the item counts could hide",
            ),
            Rule(
                "score_noise_unknown",
                "warning",
                "whether two task scores are within noise cannot be judged: an item count (eval_items) is not stated",
                "state each score's eval_items (GSM8K's test set: 1,319; HumanEval: 164; MMLU-Pro: 12,032)",
            ),
            Rule(
                "source_conflict",
                "error",
                "two entries of the same figure from the same source disagree on a condition",
                "read the source again: one transcription, or the source itself, is wrong",
            ),
            Rule(
                "source_value_conflict",
                "warning",
                "the same source gives two values for the same metric and no stated condition tells them apart",
                "state the condition that differs between the two figures",
            ),
            Rule(
                "implausible",
                "error",
                "the figure is beyond the hardware's physical limit (datasheet roofline), or outside "
                "what its definition allows (a negative rate, acceptance outside 0-1, fewer than 1 "
                "token per pass, more tokens counted than streamed)",
                "check the unit, the metric definition (aggregate vs per stream) and the conditions; "
                "for a run, the server's counters and usage",
            ),
            Rule(
                "runtime_lacks_drafter",
                "error",
                "the figure's runtime has no such drafter, or not at the figure's runtime_version",
                "check the runtime and its version: the figure cannot have been measured so",
            ),
            Rule(
                "runtime_version_decides",
                "warning",
                "only some versions of the figure's runtime have its drafter, and the figure states no runtime_version",
                "state runtime_version (e.g. Ollama drafts for GGUF models only from 0.30)",
            ),
            Rule(
                "no_matching_run",
                "info",
                "no measured or simulated run matches the cited figure's conditions",
                "run the missing conditions, or compare with the closest run and name what differs",
            ),
            Rule(
                "table_confounder",
                "warning",
                "numbers side by side differ in a condition outside the varied axis",
                "split the table by that condition, or make it a varied axis",
            ),
            Rule(
                "table_unknown",
                "info",
                "a condition that can move the numbers is unknown for some of the numbers side by side",
                "record it (runtime version, prompt tokens as counted by the server)",
            ),
            Rule(
                "table_mixed_source",
                "warning",
                "measured and simulated numbers stand side by side",
                "label each number's source, or split the table",
            ),
        )
    }
)


@dataclass(frozen=True)
class Finding:
    """One result of one rule: where (figures or runs), expected, found."""

    rule: str
    figures: tuple[str, ...]
    """Figure ids or run ids the finding is about."""
    expected: str
    found: str
    condition: str | None = None

    @property
    def severity(self) -> str:
        return RULES[self.rule].severity

    @property
    def recommendation(self) -> str:
        return RULES[self.rule].recommendation

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "figures": list(self.figures),
            "condition": self.condition,
            "expected": self.expected,
            "found": self.found,
            "recommendation": self.recommendation,
        }


def finding(
    rule: str, figures: tuple[str, ...], expected: str, found: str, condition: str | None = None
) -> Finding:
    """A finding of a known rule (an unknown rule name is a programming error)."""
    if rule not in RULES:
        raise KeyError(rule)
    return Finding(rule, figures, expected, found, condition)
