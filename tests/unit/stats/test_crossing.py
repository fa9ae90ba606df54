"""Where a drafter stops paying between two measured concurrencies: the crossing of 1, log-linear in the
load between the bracketing points, always inside the bracket."""

from __future__ import annotations

import math

import pytest

from specexp.stats.crossing import crossing


def test_the_crossing_is_log_linear_between_the_bracketing_levels() -> None:
    # 1.2x at 16, 0.8x at 64: half way in speedup is half way in log(concurrency)
    assert crossing(16, 1.2, 64, 0.8) == pytest.approx(32.0)
    # a drafter that barely pays at 16 stops near 16; one that barely loses at 64 stops near 64
    assert crossing(16, 1.01, 64, 0.5) == pytest.approx(16 * 4 ** (0.01 / 0.51))
    near = crossing(1, 1.5, 2, 0.99)
    assert 1 < near < 2 and math.isclose(near, 2 ** (0.5 / 0.51))


@pytest.mark.parametrize(("x0", "x1"), [(0.9, 0.8), (1.2, 1.1), (1.0, 1.0)])
def test_no_crossing_without_a_paying_and_a_losing_level(x0: float, x1: float) -> None:
    with pytest.raises(ValueError, match="no crossing"):
        crossing(4, x0, 8, x1)
