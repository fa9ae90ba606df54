"""Two runs of one task scored item by item: the baseline's and the drafter's (docs/answers.md
section 2).

- McNemar's exact test of right/wrong: of the items the runs disagree on, b are right only in the
  baseline and c only with the drafter; under "no change" each disagreement is a fair coin, so
  p = the two-sided binomial probability of a split at least as uneven as (b, c).
- A paired bootstrap interval of the score difference (drafter - baseline): items are drawn with
  replacement, each bringing both of its scores, `resamples` times; the interval is the middle
  `level` of the differences (percentile method). It works for partial credit too.

"Within noise", the way the studies used it: the interval holds 0 (and so McNemar's p is not
small either, up to the edge cases of a discrete test); the interval says how large a change the
run could have hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 10_000
WITHIN, BEYOND = "within noise", "differs"


@dataclass(frozen=True)
class PairedScores:
    items: int
    """Items both runs scored."""
    baseline_score: float
    drafter_score: float
    difference: float
    """drafter - baseline, in score units (1 = every item)."""
    low: float
    high: float
    """The paired bootstrap interval of the difference."""
    level: float
    baseline_only: int
    """Items right without the drafter and wrong with it (McNemar's b)."""
    drafter_only: int
    """Items right with the drafter only (McNemar's c)."""
    mcnemar_p: float
    resamples: int
    seed: int
    verdict: str


def mcnemar_exact(baseline_only: int, drafter_only: int) -> float:
    """Two-sided exact McNemar p-value of (b, c) disagreements."""
    n = baseline_only + drafter_only
    if n == 0:
        return 1.0
    from scipy import stats  # 1-2 s to import: only where a test is computed

    return float(stats.binomtest(baseline_only, n, 0.5).pvalue)


def paired_bootstrap(
    baseline: np.ndarray, drafter: np.ndarray, resamples: int, level: float, seed: int
) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(baseline), size=(resamples, len(baseline)))
    differences = (drafter[picks] - baseline[picks]).mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(differences, [tail, 1 - tail])
    return float(low), float(high)


def compare_scores(
    baseline: Mapping[str, float],
    drafter: Mapping[str, float],
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> PairedScores | None:
    """Pair the runs on the items both scored (None: none in common)."""
    items = sorted(set(baseline) & set(drafter))
    if not items:
        return None
    a = np.array([float(baseline[i]) for i in items])
    b = np.array([float(drafter[i]) for i in items])
    low, high = paired_bootstrap(a, b, resamples, level, seed)
    right_a, right_b = a >= 0.5, b >= 0.5
    only_a, only_b = int(np.sum(right_a & ~right_b)), int(np.sum(right_b & ~right_a))
    return PairedScores(
        items=len(items),
        baseline_score=float(a.mean()),
        drafter_score=float(b.mean()),
        difference=float(b.mean() - a.mean()),
        low=low,
        high=high,
        level=level,
        baseline_only=only_a,
        drafter_only=only_b,
        mcnemar_p=mcnemar_exact(only_a, only_b),
        resamples=resamples,
        seed=seed,
        verdict=WITHIN if low <= 0.0 <= high else BEYOND,
    )
