"""How sure a figure is: the bootstrap over runs (windows, or server starts where there are several),
a speedup's interval and the noise rule built on it, and the two spreads a figure carries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specexp.stats.bootstrap import (
    Runs,
    holds_one,
    interval,
    metric_runs,
    ratio_interval,
    spreads,
)


def one_server(*values: float) -> Runs:
    return Runs(tuple(values), (0,) * len(values))


def test_few_runs_give_their_own_range_and_one_run_no_interval() -> None:
    # three windows: the median of three resampled lands on the min or the max a quarter of the
    # time each, so the 95 % interval is their range: no narrower than what was seen
    assert interval(one_server(10.0, 11.0, 12.5)) == (10.0, 12.5)
    assert interval(one_server(10.0)) is None and interval(None) is None
    assert interval(one_server(7.0, 7.0, 7.0)) == (7.0, 7.0)


def test_many_runs_narrow_the_interval_around_the_median_as_theory_says() -> None:
    # the median's standard error of a normal sample is 1.2533 sigma / sqrt(n); one sample's
    # bootstrap width scatters about it by ~15 %, so twenty samples' mean is held to it
    expected = 2 * 1.96 * 1.2533 * 5.0 / math.sqrt(200)
    widths = []
    for seed in range(20):
        values = np.random.default_rng(seed).normal(100.0, 5.0, 200)
        low, high = interval(one_server(*values))  # type: ignore[misc]
        assert low < float(np.median(values)) < high
        widths.append(high - low)
    assert float(np.mean(widths)) == pytest.approx(expected, rel=0.1)


def test_starts_are_drawn_whole_so_a_restart_s_move_widens_the_interval() -> None:
    # ten windows on each of three starts: each start's windows agree within 0.5 %, the starts
    # differ by 10 %
    windows = tuple(base + 0.05 * i for base in (100.0, 105.0, 110.0) for i in range(10))
    starts = tuple(s for s in range(3) for _ in range(10))
    over_starts = interval(Runs(windows, starts))
    as_one_server = interval(one_server(*windows))
    assert over_starts is not None and as_one_server is not None
    # drawn whole, three starts leave the median anywhere from the slowest start to the fastest
    assert over_starts[0] <= 100.5 and over_starts[1] >= 110.0
    # as one server's thirty windows, it seldom leaves the middle start's neighbourhood
    assert as_one_server[0] > 101.0 and as_one_server[1] < 109.0
    assert as_one_server[1] - as_one_server[0] < 0.6 * (over_starts[1] - over_starts[0])


def test_a_speedup_is_within_noise_when_its_interval_holds_one() -> None:
    base = one_server(100.0, 103.0, 98.0, 101.0, 99.0)
    faster = one_server(110.0, 112.0, 108.0, 111.0, 109.0)
    level = one_server(101.0, 97.0, 102.0, 100.0, 99.5)
    beyond = ratio_interval(faster, base)
    assert beyond is not None and beyond[0] > 1 and holds_one(beyond) is False
    assert holds_one(ratio_interval(level, base)) is True
    assert ratio_interval(faster, one_server(100.0)) is None and holds_one(None) is None


def test_overlapping_ranges_can_still_be_beyond_noise_with_seven_runs_a_side() -> None:
    # the ranges overlap (one slow window of the faster arm), yet its median is clearly higher:
    # the interval of the ratio of medians leaves out 1 where a min-max overlap would not
    base = one_server(100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9)
    arm = one_server(104.0, 104.5, 103.8, 104.2, 104.1, 103.9, 99.9)
    low, _ = ratio_interval(arm, base)  # type: ignore[misc]
    assert min(arm.values) < max(base.values)  # the spreads overlap
    assert low > 1.0
    # with five a side, one slow window in five is a resample's median often enough (6 %) that
    # the interval reaches below 1: few runs cannot tell
    five = ratio_interval(one_server(*arm.values[:4], 99.9), one_server(*base.values[:5]))
    assert five is not None and five[0] < 1.0


def test_the_draws_are_seeded_so_a_record_gives_one_interval() -> None:
    runs = Runs((1.0, 1.3, 0.9, 1.1, 1.2, 1.05), (0, 0, 1, 1, 2, 2))
    assert interval(runs) == interval(runs)
    assert ratio_interval(runs, one_server(1.0, 1.1, 0.95)) == ratio_interval(
        runs, one_server(1.0, 1.1, 0.95)
    )


def test_runs_are_read_from_samples_with_their_starts_and_gaps_dropped() -> None:
    samples = {"decode_tps": [10.0, None, 12.0, float("nan"), 11.0], "ttft_s": [None]}
    runs = metric_runs(samples, [0, 0, 1, 1, 2], "decode_tps")
    assert runs == Runs((10.0, 12.0, 11.0), (0, 1, 2)) and runs.server_starts == 3
    assert metric_runs(samples, None, "decode_tps") == Runs((10.0, 12.0, 11.0), (0, 0, 0))
    assert metric_runs(samples, None, "ttft_s") is None
    assert metric_runs(samples, None, "aggregate_tps") is None


def test_both_spreads_within_a_server_and_across_starts() -> None:
    runs = Runs((100.0, 102.0, 110.0, 111.0), (0, 0, 1, 1))
    s = spreads(runs)
    assert s.within_server == pytest.approx(2.0 / 101.0)  # the wider start: 100-102
    assert s.across_starts == pytest.approx((110.5 - 101.0) / 105.75)
    assert spreads(one_server(5.0, 6.0)).across_starts is None
    assert spreads(None) == (None, None)
