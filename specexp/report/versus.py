"""How a table's row compares: with its baseline (the speedup), and with the best of its table."""

from __future__ import annotations

from collections.abc import Sequence

from specexp.check.judgments import within_noise
from specexp.report.tables import Row


def speedup_cell(row: Row, base: Row | None, metric: str) -> str:
    """A table's "speedup vs none" cell: the ratio over the row's baseline, and whether it is
    within noise."""
    if row.conditions.drafter == "none":
        return "baseline"
    if base is None or not base.metrics.get(metric) or not row.metrics.get(metric):
        return "no baseline"
    ratio = row.metrics.get(metric) / base.metrics.get(metric)
    if overlaps(row, base, metric):
        return f"{ratio:.2f}× (within noise)"
    return f"{ratio:.2f}×"


def overlaps(a: Row, b: Row, metric: str) -> bool:
    """The two rows' (min–max) spreads of `metric` overlap: their difference is within noise."""
    return bool(within_noise(a.spread.get(metric), b.spread.get(metric)))


def best_of(members: Sequence[Row], metric: str) -> Row | None:
    """The fastest of `members` in `metric`, where there is a spread to judge the others by (two
    rows or more, one with repeats that differ); else None."""
    ranked = [r for r in members if r.metrics.get(metric) is not None]
    spread = [r.spread.get(metric) for r in ranked]
    if len(ranked) < 2 or not any(s and s[0] != s[1] for s in spread):
        return None  # one repeat each: no spread to say what is within noise
    return max(ranked, key=lambda r: r.metrics.get(metric))


def versus_best(row: Row, best: Row | None, metric: str) -> str:
    """`best` for the fastest row; `≈ best (within noise)` where a row's spread overlaps the best's."""
    if best is None or row.metrics.get(metric) is None:
        return "—"
    if row is best:
        return "best"
    return "≈ best (within noise)" if overlaps(row, best, metric) else "—"
