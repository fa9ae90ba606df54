"""How a table's row compares: with its baseline (the speedup), and with the best of its table."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from specexp.check.judgments import within_noise
from specexp.report.tables import Row
from specexp.stats.bootstrap import holds_one, ratio_interval
from specexp.stats.crossing import crossing_range


def speedup_cell(row: Row, base: Row | None, metric: str) -> str:
    """A table's "speedup vs none" cell: the ratio over the row's baseline with its 95 % bootstrap
    interval [low–high] where both have two runs or more, and whether it is within noise (the
    interval holds 1)."""
    if row.conditions.drafter == "none":
        return "baseline"
    if base is None or not base.metrics.get(metric) or not row.metrics.get(metric):
        return "no baseline"
    ratio = row.metrics.get(metric) / base.metrics.get(metric)
    bounds = ratio_interval(row.runs(metric), base.runs(metric))
    text = f"{ratio:.2f}×" + (f" [{bounds[0]:.2f}–{bounds[1]:.2f}]" if bounds else "")
    return text + (" (within noise)" if holds_one(bounds) else "")


def overlaps(a: Row, b: Row, metric: str) -> bool:
    """The two rows' ratio of `metric` is within noise (its bootstrap interval holds 1)."""
    return bool(within_noise(a.runs(metric), b.runs(metric)))


def best_of(members: Sequence[Row], metric: str) -> Row | None:
    """The fastest of `members` in `metric`, where there are runs to judge the others by (two rows
    or more, each of two runs or more); else None."""
    ranked = [r for r in members if r.metrics.get(metric) is not None]
    judged = [r for r in ranked if (runs := r.runs(metric)) is not None and len(runs.values) > 1]
    if len(ranked) < 2 or len(judged) < 2:
        return None  # one repeat each: nothing to say what is within noise
    return max(ranked, key=lambda r: r.metrics.get(metric))


def versus_best(row: Row, best: Row | None, metric: str) -> str:
    """`best` for the fastest row; `≈ best (within noise)` where a row's spread overlaps the best's."""
    if best is None or row.metrics.get(metric) is None:
        return "—"
    if row is best:
        return "best"
    return "≈ best (within noise)" if overlaps(row, best, metric) else "—"


def speedup_bounds(row: Row, base: Row, metric: str) -> tuple[float, float] | None:
    """The lowest and the highest speedup the two rows' (min–max) spreads over their repeats allow:
    the row's lowest over the baseline's highest, and its highest over the baseline's lowest; None
    where neither side has a spread, or a figure is missing."""
    ours, theirs = row.metrics.get(metric), base.metrics.get(metric)
    mine, other = row.spread.get(metric), base.spread.get(metric)
    if not ours or not theirs or (not mine and not other):
        return None
    low, high = mine or [ours, ours]
    base_low, base_high = other or [theirs, theirs]
    if base_low <= 0:
        return None
    return low / base_high, high / base_low


def crossing_spread(
    c0: float,
    bounds0: tuple[float, float] | None,
    c1: float,
    bounds1: tuple[float, float] | None,
    show: Callable[[float], str],
) -> str:
    """ "; over the repeats' spread, A to B": how far the crossing between levels c0 and c1 moves over
    the speedups' bounds (specexp.stats.crossing.crossing_range), an end open ("before c0", "beyond
    c1") where the spread reaches past the bracket; "" without a spread."""
    if (
        bounds0 is None
        or bounds1 is None
        or (bounds0[0] == bounds0[1] and bounds1[0] == bounds1[1])
    ):
        return ""
    early, late = crossing_range(c0, bounds0, c1, bounds1)
    low = show(early) if early is not None else f"before {show(c0)}"
    high = show(late) if late is not None else f"beyond {show(c1)}"
    return f"; over the repeats' spread, {low} to {high}"
