"""Where a speedup crosses 1 between two measured levels of a load (concurrency, request rate).

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
