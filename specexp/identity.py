"""output_identical: at temperature 0, a drafter's completions vs the drafter=none ones.

Measurements keep a digest of each completion per request id; requests of the same workload
carry the same ids in every job of a sweep, so two runs' completions of the same prompt can be
compared without keeping the text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specexp.record import find_results

IGNORED = {"drafter", "k", "drafter_config", "draft_model", "runtime_version"}


def fill_output_identity(result: dict[str, Any], root: Path) -> None:
    """Set metrics.output_identical of each measurement of `result` where a baseline exists."""
    conditions = result.get("conditions") or {}
    if conditions.get("drafter") in (None, "none") or conditions.get("temperature") != 0:
        return
    baseline = _baseline(conditions, root)
    if baseline is None:
        return
    theirs: dict[str, str] = {}
    for m in baseline.get("measurements") or []:
        theirs.update(m.get("completions") or {})
    for m in result.get("measurements") or []:
        ours = m.get("completions") or {}
        shared = [rid for rid in ours if rid in theirs]
        if shared:
            m["metrics"]["output_identical"] = all(ours[rid] == theirs[rid] for rid in shared)


def _baseline(conditions: dict[str, Any], root: Path) -> dict[str, Any] | None:
    for _, other in find_results([root]):
        c = other.get("conditions") or {}
        if other.get("status") != "ok" or c.get("drafter") != "none":
            continue
        if all(c.get(key) == value for key, value in conditions.items() if key not in IGNORED):
            return other
    return None
