"""Where a speedup crosses 1 between two measured levels of a load (concurrency, request rate) or of
context depth (prompt tokens).

Between the last level at which a drafter pays (speedup x0 >= 1 at level c0) and the next at which it
does not (x1 < 1 at c1), the speedup is taken to fall linearly in log(level), as throughput curves
against concurrency do between powers of two:

    log c* = log c0 + (x0 - 1) / (x0 - x1) * (log c1 - log c0)

The two measured levels are the bracket the crossing is known to lie in; c* is an estimate inside it,
never a measured figure.
"""

from __future__ import annotations

import math


def crossing(c0: float, x0: float, c1: float, x1: float) -> float:
    """The level between c0 and c1 (both > 0) at which a speedup going from x0 >= 1 to x1 < 1 is 1."""
    if not (c0 > 0 and c1 > 0 and x0 >= 1 > x1):
        raise ValueError(f"no crossing between ({c0}, {x0}) and ({c1}, {x1})")
    share = (x0 - 1) / (x0 - x1)
    return math.exp(math.log(c0) + share * (math.log(c1) - math.log(c0)))


def crossing_range(
    c0: float, x0: tuple[float, float], c1: float, x1: tuple[float, float]
) -> tuple[float | None, float | None]:
    """How far the crossing moves over the speedups' spreads: x0 and x1 each as (lowest, highest)
    over the repeats (a drafter's lowest over its baseline's highest, and the other way round).
    Lower speedups cross sooner, higher ones later. Each end is None where the spread reaches past
    the bracket: the lowest speedup at c0 is already below 1 (the crossing may lie before c0), or
    the highest at c1 is still at or above 1 (it may lie beyond c1)."""
    early = crossing(c0, x0[0], c1, x1[0]) if x0[0] >= 1 > x1[0] else None
    late = crossing(c0, x0[1], c1, x1[1]) if x0[1] >= 1 > x1[1] else None
    return early, late
