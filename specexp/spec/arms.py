"""A drafter arm (a drafter at one k) as every log line, label and figure writes it."""

from __future__ import annotations

from typing import Any


def arm_label(drafter: Any, k: Any) -> str:
    """A drafter arm in plain text, as every log line, chart label and benchmark table writes it:
    `mtp k=3`, or the drafter alone where k is not set (`none`, a drafter at its default)."""
    return f"{drafter} k={k}" if k is not None else str(drafter)


def draft_length(drafter: Any, k: Any) -> int:
    """Draft tokens a step proposes, as a count: k for a drafter run, 0 for the baseline or where k
    was not set (the engine's default was not recorded as a number)."""
    return int(k or 0) if drafter != "none" else 0
