"""Where a drafter stops paying between two measured concurrencies: the crossing of 1, log-linear in the
load between the bracketing points, always inside the bracket."""

from __future__ import annotations

import math

import pytest

from specexp.stats.crossing import crossing, crossing_range


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


def test_the_repeats_spread_moves_the_crossing_lower_speedups_sooner() -> None:
    early, late = crossing_range(16, (1.1, 1.3), 64, (0.7, 0.9))
    assert early == pytest.approx(crossing(16, 1.1, 64, 0.7))
    assert late == pytest.approx(crossing(16, 1.3, 64, 0.9))
    assert 16 < early < crossing(16, 1.2, 64, 0.8) < late < 64


def test_a_spread_past_the_bracket_leaves_that_end_open() -> None:
    # the lowest speedup at 16 is below 1: the crossing may come before 16
    assert crossing_range(16, (0.95, 1.3), 64, (0.7, 0.9))[0] is None
    # the highest at 64 still pays: it may come after 64
    assert crossing_range(16, (1.1, 1.3), 64, (0.7, 1.05))[1] is None
