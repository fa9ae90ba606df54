"""Two published scores with their item counts and nothing else (docs/answers.md section 3):
the checker's judgment of a cited pair such as GSM8K 97.5 vs 98.0.

The items each run got right are not published, so the pairing is unknown. The interval is
Newcombe's hybrid score interval for a difference of two independent proportions (Wilson
intervals of each score combined; Newcombe 1998, method 10), which is wider than a paired one
would be where the runs agree on most items: "differs" under it means beyond noise either way,
and "within noise" means within noise for an unpaired comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specexp.stats.paired import BEYOND, LEVEL, WITHIN


@dataclass(frozen=True)
class ScorePair:
    first: float
    second: float
    first_items: int
    second_items: int
    difference: float
    """second - first, in score units."""
    low: float
    high: float
    level: float
    verdict: str


def wilson(score: float, n: int, z: float) -> tuple[float, float]:
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def compare_proportions(
    first: float, first_items: int, second: float, second_items: int, level: float = LEVEL
) -> ScorePair:
    """Scores in [0, 1] of `first_items` and `second_items` items."""
    from scipy import stats  # 1-2 s to import: only where a test is computed

    z = float(stats.norm.isf((1 - level) / 2))
    l1, u1 = wilson(first, first_items, z)
    l2, u2 = wilson(second, second_items, z)
    d = second - first
    low = d - math.sqrt((second - l2) ** 2 + (u1 - first) ** 2)
    high = d + math.sqrt((u2 - second) ** 2 + (first - l1) ** 2)
    return ScorePair(
        first=first,
        second=second,
        first_items=first_items,
        second_items=second_items,
        difference=d,
        low=low,
        high=high,
        level=level,
        verdict=WITHIN if low <= 0.0 <= high else BEYOND,
    )
