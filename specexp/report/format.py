"""How numbers, conditions and server text are written in reports."""

from __future__ import annotations

import re
from typing import Any

from specexp.record.escape import Markdown, cell, code, code_span, link, markdown
from specexp.spec.vocabulary import METRICS

__all__ = [
    "COUNTS",
    "Markdown",
    "arm",
    "cell",
    "code",
    "code_span",
    "header",
    "link",
    "markdown",
    "number",
    "run_cell",
    "with_spread",
]


VERSIONED = re.compile(r"([a-z0-9_]+)@(\d+)")
"""A versioned id (a workload's `fresh_generation@1`): written `fresh_generation v1`, so that its
version does not read as a concurrency."""

COUNTS = ("cached_prompt_tokens", "kv_cache_tokens")
"""Metrics that count tokens: written as whole numbers."""


def number(value: Any, metric: str | None = None) -> str:
    """A value as a person would write it in a measurements table."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return " / ".join(number(v, metric) for v in value)
    if isinstance(value, float) and metric is None:
        return f"{value:g}"  # a condition (gpu_memory_utilization 0.44, temperature 0.7): as given
    if isinstance(value, float):
        unit = METRICS[metric].unit if metric in METRICS else ""
        if unit.startswith("ratio"):
            return f"{value * 100:.1f} %"
        if unit == "s":
            return f"{value:.3f}" if value < 10 else f"{value:.1f}"
        if unit.startswith("$"):
            return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"
        if metric in COUNTS:
            return f"{value:,.0f}"
        if unit == "tok" and abs(value) < 100:
            return f"{value:.2f}"
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, str) and (versioned := VERSIONED.fullmatch(value)):
        return f"{versioned[1]} v{versioned[2]}"
    return str(value)


def arm(drafter: Any, k: Any, none: str | None = None) -> str:
    """A drafter and its k as a report names them (`mtp` k=3); `none`, where given, names the
    drafter-free arm ("no drafter")."""
    if none is not None and drafter == "none":
        return none
    return code_span(drafter) + (f" k={number(k)}" if k is not None else "")


def with_spread(value: Any, spread: list[float] | None, metric: str) -> str:
    """Median with (min–max) when the figure has several samples that differ as written."""
    text = number(value, metric)
    if value is None or not spread:
        return text
    low, high = number(spread[0], metric), number(spread[1], metric)
    return text if low == high else f"{text} ({low}–{high})"


def header(metric: str) -> str:
    """Column header: label, unit, direction, and the definition's name."""
    m = METRICS[metric]
    arrow = {"higher": " ↑", "lower": " ↓"}.get(m.better, "")
    unit = "%" if m.unit.startswith("ratio") else m.unit
    return Markdown(f"{cell(m.label)} ({cell(unit)}){arrow} {code_span(m.name)}")


def run_cell(run_id: str, target: str | None) -> Markdown:
    """A run id as a table cell: a link to its record where the report knows the path."""
    return link(code_span(run_id), target) if target else code_span(run_id)
