"""Task scores paired item by item (specexp.stats.paired) and published score pairs with their
item counts only (specexp.stats.proportions)."""

from __future__ import annotations

import numpy as np
import pytest

from specexp.stats.paired import BEYOND, WITHIN, compare_scores, mcnemar_exact
from specexp.stats.proportions import compare_proportions


def test_mcnemar_is_the_exact_binomial_of_the_disagreements() -> None:
    # 1 vs 9 disagreements: 2 x P(X <= 1), X ~ Binomial(10, 1/2) = 2 x 11 / 1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(5, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_runs_that_agree_on_most_items_are_paired_and_within_noise() -> None:
    rng = np.random.default_rng(0)
    right = rng.random(400) < 0.8
    flipped = right.copy()
    flipped[:6] = ~flipped[:6]  # six items change, both ways
    base = {f"t/{i}": float(v) for i, v in enumerate(right)}
    drafter = {f"t/{i}": float(v) for i, v in enumerate(flipped)}
    result = compare_scores(base, drafter, seed=1)
    assert result is not None and result.items == 400
    assert result.baseline_only + result.drafter_only == 6
    assert result.low <= 0 <= result.high and result.verdict == WITHIN
    unpaired = compare_proportions(result.baseline_score, 400, result.drafter_score, 400)
    assert result.high - result.low < (unpaired.high - unpaired.low) / 3  # what pairing buys


def test_a_drafter_that_breaks_answers_differs() -> None:
    base = {f"t/{i}": 1.0 for i in range(200)}
    drafter = {f"t/{i}": float(i % 4 != 0) for i in range(200)}  # a quarter now wrong
    result = compare_scores(base, drafter, seed=1)
    assert result is not None and result.verdict == BEYOND and result.mcnemar_p < 1e-10
    assert result.difference == pytest.approx(-0.25)


def test_only_items_both_runs_scored_are_paired() -> None:
    assert compare_scores({"a": 1.0}, {"b": 1.0}) is None
    result = compare_scores({"a": 1.0, "b": 0.0}, {"b": 1.0, "c": 0.0})
    assert result is not None and result.items == 1


@pytest.mark.parametrize(
    ("name", "with_mtp", "without", "items", "verdict"),
    [
        ("gsm8k", 0.975, 0.980, 1319, WITHIN),
        ("mmlu_pro", 0.770, 0.745, 12032, BEYOND),
        ("humaneval", 0.970, 0.945, 164, WITHIN),
    ],
)
def test_the_studies_score_pairs_at_their_full_item_counts(
    name: str, with_mtp: float, without: float, items: int, verdict: str
) -> None:
    """At MMLU-Pro's 12,032 items a 2.5-point gap is beyond noise even unpaired; GSM8K's half a
    point at 1,319 items and HumanEval's 2.5 points at 164 are within it."""
    assert compare_proportions(without, items, with_mtp, items).verdict == verdict


def test_newcombes_interval_matches_the_published_example() -> None:
    """Newcombe (1998), table II, example (a): 56/70 vs 48/80 -> 0.0524 to 0.3339."""
    result = compare_proportions(48 / 80, 80, 56 / 70, 70)
    assert result.low == pytest.approx(0.0524, abs=5e-4)
    assert result.high == pytest.approx(0.3339, abs=5e-4)
