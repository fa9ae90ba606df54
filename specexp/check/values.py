"""Condition values and units: their types, the values accepted, and when two are the same.

Types, bounds and accepted values are the vocabulary's (specexp.spec.vocabulary, docs/vocabulary.md).
Names of config options (hardware, model, quantization, workload) must be options of `conf/`, so that a cited figure and a run speak
the same vocabulary and a typo is an error, not a silent confounder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from specexp.spec.vocabulary import CONDITIONS, accepted

UNITS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        "tok/s": {"tok/s": 1.0, "tokens/s": 1.0},
        "s": {"s": 1.0, "ms": 1e-3},
        "ratio": {"ratio": 1.0, "%": 1e-2},
        "ratios": {"ratios": 1.0, "%": 1e-2},
        "tok": {"tok": 1.0, "tokens": 1.0},
        "bool": {"bool": 1.0},
    }
)
"""A metric's unit -> the units a cited figure may be written in, with the factor to it."""

_WORKLOAD = re.compile(r"^([A-Za-z0-9_.-]+?)(?:@([0-9]+))?$")


def check_value(condition: str, value: Any) -> tuple[str, list[str] | None] | None:
    """None when `value` is a valid value of `condition`, else (problem, accepted values)."""
    c = CONDITIONS[condition]
    if c.type is bool and not isinstance(value, bool):
        return f"must be true or false (got {value!r})", ["true", "false"]
    if c.type is int and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be an integer (got {value!r})", None
    if c.type is float and (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    ):
        return f"must be a number (got {value!r})", None
    if c.type is str and not isinstance(value, str):
        return f"must be a string; quote it (got {value!r})", accepted(condition)
    if c.maximum is not None and c.minimum is not None and not c.minimum < value <= c.maximum:
        return f"must be in ({c.minimum:g}, {c.maximum:g}] (got {value!r})", None
    if c.minimum is not None and value < c.minimum:
        return f"must be at least {c.minimum:g} (got {value!r})", None
    choices = accepted(condition)
    if choices is not None:
        name = workload_name(value) if condition == "workload" else value
        if name not in choices:
            return f"unknown value {value!r}", choices
    return None


def workload_name(value: str) -> str:
    """`edit_heavy@1` -> `edit_heavy`."""
    match = _WORKLOAD.match(value)
    return match.group(1) if match else value


def same(condition: str, a: Any, b: Any) -> bool:
    """Whether two values of a condition are the same for comparing figures.

    A workload without a version matches any version of it; numbers compare within
    the condition's tolerance (relative; float precision unless the vocabulary sets one).
    """
    if a is None or b is None:
        return a is None and b is None
    if condition == "workload" and isinstance(a, str) and isinstance(b, str):
        ma, mb = _WORKLOAD.match(a), _WORKLOAD.match(b)
        if ma and mb:
            return ma.group(1) == mb.group(1) and (
                None in (ma.group(2), mb.group(2)) or ma.group(2) == mb.group(2)
            )
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=CONDITIONS[condition].tolerance, abs_tol=1e-12)
    return bool(a == b)


def show(value: Any) -> str:
    """A condition value as the reader wrote it (null -> none)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
