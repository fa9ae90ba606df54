"""Condition values and units: their types, the values accepted, and when two are the same.

Types follow vocabulary.md section 1. Names of config options (hardware, model,
quantization, workload) must be options of `conf/`, so that a cited figure and a run speak
the same vocabulary and a typo is an error, not a silent confounder.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, get_args

from specexp import paths
from specexp.check.relevance import TOLERANCE
from specexp.spec import DrafterSpec, RuntimeSpec

CONDITION_TYPES: Mapping[str, type] = MappingProxyType({
    "hardware": str, "gpu_count": int, "draft_model": str, "max_model_len": int, "gpu_shared": bool, "gpu_memory_utilization": float,
    "model": str, "quantization": str, "kv_cache_dtype": str, "runtime": str,
    "runtime_version": str, "drafter": str, "k": int, "drafter_config": str, "workload": str,
    "prompt_tokens": int, "output_tokens": int, "ignore_eos": bool, "concurrency": int,
    "cache": str, "prefix_caching": bool, "thinking": bool, "temperature": float,
    "repeats": int, "source": str,
})
POSITIVE_INTS = ("k", "max_model_len", "prompt_tokens", "output_tokens", "concurrency", "repeats")

UNITS: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "tok/s": {"tok/s": 1.0, "tokens/s": 1.0},
    "s": {"s": 1.0, "ms": 1e-3},
    "ratio": {"ratio": 1.0, "%": 1e-2},
    "ratios": {"ratios": 1.0, "%": 1e-2},
    "tok": {"tok": 1.0, "tokens": 1.0},
    "bool": {"bool": 1.0},
})
"""A metric's unit -> the units a cited figure may be written in, with the factor to it."""

_WORKLOAD = re.compile(r"^([A-Za-z0-9_.-]+?)(?:@([0-9]+))?$")


def accepted_values(condition: str) -> list[str] | None:
    """The closed set of values a condition takes, or None where any value of its type is fine."""
    if condition in ("hardware", "model", "quantization", "workload"):
        return paths.options(condition)
    if condition == "drafter":
        return list(get_args(DrafterSpec.model_fields["name"].annotation))
    if condition == "runtime":
        return list(get_args(RuntimeSpec.model_fields["name"].annotation))
    if condition == "cache":
        return ["cold", "warm"]
    if condition == "source":
        return ["measured", "simulated", "cited"]
    return None


def check_value(condition: str, value: Any) -> tuple[str, list[str] | None] | None:
    """None when `value` is a valid value of `condition`, else (problem, accepted values)."""
    kind = CONDITION_TYPES[condition]
    if kind is bool and not isinstance(value, bool):
        return f"must be true or false (got {value!r})", ["true", "false"]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        return f"must be an integer (got {value!r})", None
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                          or not math.isfinite(value)):
        return f"must be a number (got {value!r})", None
    if kind is str and not isinstance(value, str):
        return f"must be a string; quote it (got {value!r})", accepted_values(condition)
    if condition in POSITIVE_INTS and value < 1:
        return f"must be at least 1 (got {value!r})", None
    if condition == "gpu_memory_utilization" and not 0 < value <= 1:
        return f"must be in (0, 1] (got {value!r})", None
    if condition == "temperature" and value < 0:
        return f"must be at least 0 (got {value!r})", None
    accepted = accepted_values(condition)
    if accepted is not None:
        name = workload_name(value) if condition == "workload" else value
        if name not in accepted:
            return f"unknown value {value!r}", accepted
    return None


def workload_name(value: str) -> str:
    """`edit_heavy@1` -> `edit_heavy`."""
    match = _WORKLOAD.match(value)
    return match.group(1) if match else value


def same(condition: str, a: Any, b: Any) -> bool:
    """Whether two values of a condition are the same for comparing figures.

    A workload without a version matches any version of it; numbers compare within
    `TOLERANCE` (relative) where one is set, else to float precision.
    """
    if a is None or b is None:
        return a is None and b is None
    if condition == "workload" and isinstance(a, str) and isinstance(b, str):
        ma, mb = _WORKLOAD.match(a), _WORKLOAD.match(b)
        if ma and mb:
            return ma.group(1) == mb.group(1) and (None in (ma.group(2), mb.group(2)) or ma.group(2) == mb.group(2))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=TOLERANCE.get(condition, 1e-9), abs_tol=1e-12)
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
