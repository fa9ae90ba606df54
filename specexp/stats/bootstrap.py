"""How sure a figure is: a bootstrap over runs, not over requests (docs/vocabulary.md, "How sure
a figure is").

A figure is the median of its timed windows (one per repeat, on one or more server starts). Its
interval is the middle `level` of that median over `RESAMPLES` resamples of the runs, drawn with
replacement (percentile method):

- with windows from two server starts or more, the starts are resampled, each bringing all of its
  windows (a cluster bootstrap): what a fresh start moves is then part of the interval;
- with one start, the windows are resampled.

A speedup's interval resamples both sides independently and takes the middle `level` of the ratio
of their medians. Two figures are **within noise** of each other when that interval of their
ratio holds 1. With few runs the interval is no wider than the runs' own range (three runs: their
min and max), so it understates the uncertainty; five starts or more give it meaning. The draws
are seeded: the same records give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

LEVEL = 0.95
RESAMPLES = 4000
SEED = 0


class Runs(NamedTuple):
    """One figure's value in each timed window behind it, and the server start each ran on."""

    values: tuple[float, ...]
    starts: tuple[int, ...]

    @property
    def server_starts(self) -> int:
        return len(set(self.starts))


def metric_runs(
    samples: Mapping[str, Sequence[Any]] | None,
    server_start: Sequence[int] | None,
    metric: str,
) -> Runs | None:
    """`metric`'s finite per-window values with their server starts (all on start 0 where the record
    names none); None where there are none."""
    values = (samples or {}).get(metric)
    if not values:
        return None
    starts = list(server_start) if server_start and len(server_start) == len(values) else None
    kept = [
        (float(v), starts[i] if starts else 0)
        for i, v in enumerate(values)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]
    if not kept:
        return None
    return Runs(tuple(v for v, _ in kept), tuple(s for _, s in kept))


def _clusters(runs: Runs) -> np.ndarray:
    """The runs as rows to resample: one per server start (padded with NaN) where there are two or
    more, else one per window."""
    if runs.server_starts < 2:
        return np.asarray(runs.values, dtype=float).reshape(-1, 1)
    by_start: dict[int, list[float]] = {}
    for value, start in zip(runs.values, runs.starts, strict=True):
        by_start.setdefault(start, []).append(value)
    width = max(len(v) for v in by_start.values())
    return np.array([v + [math.nan] * (width - len(v)) for v in by_start.values()], dtype=float)


def resampled_medians(runs: Runs, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The figure's median in each of `resamples` resamples of its runs."""
    rows = _clusters(runs)
    picks = rng.integers(0, len(rows), size=(resamples, len(rows)))
    drawn = rows[picks].reshape(resamples, -1)
    # starts of unequal windows are padded with NaN; np.median is the faster where none is
    return np.nanmedian(drawn, axis=1) if np.isnan(rows).any() else np.median(drawn, axis=1)


def _middle(draws: np.ndarray, level: float) -> tuple[float, float]:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def interval(
    runs: Runs | None, level: float = LEVEL, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """The figure's bootstrap interval; None with fewer than two runs (nothing to resample)."""
    if runs is None or len(runs.values) < 2:
        return None
    return _middle(resampled_medians(runs, resamples, np.random.default_rng(seed)), level)


def ratio_interval(
    ours: Runs | None,
    theirs: Runs | None,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float] | None:
    """The bootstrap interval of ours / theirs (a speedup); None unless both sides have two runs or
    more, or where a resampled denominator is not positive."""
    if ours is None or theirs is None or len(ours.values) < 2 or len(theirs.values) < 2:
        return None
    rng = np.random.default_rng(seed)
    top = resampled_medians(ours, resamples, rng)
    bottom = resampled_medians(theirs, resamples, rng)
    if not np.all(bottom > 0):
        return None
    return _middle(top / bottom, level)


def holds_one(bounds: tuple[float, float] | None) -> bool | None:
    """Whether a ratio's interval holds 1 (within noise); None without an interval."""
    return None if bounds is None else bool(bounds[0] <= 1.0 <= bounds[1])


def relative_range(values: Sequence[float]) -> float | None:
    """(max - min) / median of `values`: how far apart runs came out, as a share of the figure;
    None with fewer than two values or a median of 0."""
    if len(values) < 2:
        return None
    middle = float(np.median(values))
    return (max(values) - min(values)) / abs(middle) if middle else None


class Spreads(NamedTuple):
    """Both spreads of a figure: within one server (the widest relative range of any start's
    windows) and across server starts (the relative range of the starts' medians)."""

    within_server: float | None
    across_starts: float | None


def spreads(runs: Runs | None) -> Spreads:
    if runs is None:
        return Spreads(None, None)
    by_start: dict[int, list[float]] = {}
    for value, start in zip(runs.values, runs.starts, strict=True):
        by_start.setdefault(start, []).append(value)
    within = [r for v in by_start.values() if (r := relative_range(v)) is not None]
    medians = [float(np.median(v)) for v in by_start.values()]
    return Spreads(max(within) if within else None, relative_range(medians))
