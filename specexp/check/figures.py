"""Cited figures: the YAML of docs/vocabulary.md section 4, validated once into frozen values.

Every problem is a `SpecError`: one line naming the file, the key (``figures.ID.KEY``) and
the accepted values. A figure keeps only the conditions it states; a condition it omits (or
writes as null) is unknown. With `drafter: none`, `k` and `drafter_config` are known to be
none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specexp.check.values import UNITS, check_value
from specexp.check.yamlread import read_yaml
from specexp.spec.errors import SpecError
from specexp.spec.vocabulary import CONDITIONS, METRICS, C

FIGURE_KEYS = ("value", "unit", "metric", "source", "conditions", "note")
REQUIRED_KEYS = ("value", "unit", "metric", "source")
TOP_KEYS = ("figures", "comparisons")
COMPARISON_KEYS = ("figures", "vary", "note")


@dataclass(frozen=True)
class Figure:
    """One number with the conditions under which it was obtained."""

    id: str
    metric: str
    value: Any
    """float in the metric's unit; a tuple of floats for acceptance_by_position; bool for output_identical."""
    unit: str
    """The metric's unit (a value written in ms or % is converted)."""
    source: str | None
    conditions: Mapping[str, Any]
    """Stated conditions only; absent means unknown."""
    origin: str = "cited"
    """cited, measured or simulated."""
    as_written: str = ""
    note: str = ""
    link: str = ""
    """A run's result.json, relative to where it is shown."""


@dataclass(frozen=True)
class ComparisonSpec:
    figures: tuple[str, str]
    vary: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class FigureSet:
    where: str
    figures: Mapping[str, Figure] = field(default_factory=dict)
    comparisons: tuple[ComparisonSpec, ...] = ()


def normalise(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """Stated conditions; with drafter none, k and drafter_config are known to be none."""
    out = {k: v for k, v in conditions.items() if v is not None}
    if out.get(C.drafter) == "none":
        out.setdefault(C.k, None)
        out.setdefault(C.drafter_config, None)
    return {k: out[k] for k in CONDITIONS if k in out}


def load_figures(path: Path | str) -> FigureSet:
    """Read and validate a figures file."""
    path = Path(path)
    return parse_figures(read_yaml(path), str(path))


def load_figure_files(paths: Iterable[Path | str]) -> FigureSet:
    """Several figures files as one set; an id may appear in one file only."""
    return merge([load_figures(p) for p in paths])


def merge(sets: Sequence[FigureSet]) -> FigureSet:
    figures: dict[str, Figure] = {}
    comparisons: list[ComparisonSpec] = []
    for s in sets:
        for fid, fig in s.figures.items():
            if fid in figures:
                raise SpecError(
                    s.where, f"figures.{_k(fid)}", "id already used in another figures file"
                )
            figures[fid] = fig
        comparisons.extend(s.comparisons)
    return FigureSet(
        ", ".join(s.where for s in sets), MappingProxyType(figures), tuple(comparisons)
    )


def parse_figures(data: Any, where: str, *, extra_keys: Sequence[str] = ()) -> FigureSet:
    """Validate parsed YAML (`figures:` and optional `comparisons:`) into a FigureSet.

    `extra_keys` are top-level keys to ignore (an experiment file's own keys).
    """
    if not isinstance(data, Mapping):
        raise SpecError(
            where, "figures", "expected a mapping with a 'figures' key", accepted=TOP_KEYS
        )
    for key in data:
        if key not in TOP_KEYS and key not in extra_keys:
            raise SpecError(where, _k(key), "unknown key", accepted=TOP_KEYS, value=key)
    raw = data.get("figures")
    if not isinstance(raw, Mapping) or not raw:
        raise SpecError(where, "figures", "missing, empty or not a mapping of id -> figure")
    figures: dict[str, Figure] = {}
    for fid, body in raw.items():
        if isinstance(fid, bool) or not isinstance(fid, (str, int)) or not str(fid).strip():
            raise SpecError(where, f"figures.{_k(fid)}", "a figure id must be a non-empty string")
        if str(fid) in figures:
            raise SpecError(where, f"figures.{_k(fid)}", "id written twice")
        figures[str(fid)] = _figure(str(fid), body, where)
    comparisons = _comparisons(data.get("comparisons"), figures, where)
    return FigureSet(where, MappingProxyType(figures), comparisons)


def _known_keys(body: Any, where: str, key: str, accepted: Sequence[str]) -> None:
    """`body` must be a mapping whose keys are all in `accepted`."""
    if not isinstance(body, Mapping):
        raise SpecError(where, key, "expected a mapping", accepted=accepted)
    for k in body:
        if k not in accepted:
            raise SpecError(where, f"{key}.{_k(k)}", "unknown key", accepted=accepted, value=k)


def _figure(fid: str, body: Any, where: str) -> Figure:
    key = f"figures.{_k(fid)}"
    _known_keys(body, where, key, FIGURE_KEYS)
    for k in REQUIRED_KEYS:
        if body.get(k) is None:
            raise SpecError(where, f"{key}.{k}", "missing value")
    metric = body["metric"]
    if not isinstance(metric, str) or metric not in METRICS:
        raise SpecError(
            where, f"{key}.metric", f"unknown metric {metric!r}", accepted=METRICS, value=metric
        )
    unit, factor = _unit(body["unit"], metric, f"{key}.unit", where)
    value = _value(body["value"], metric, factor, f"{key}.value", where)
    for k in ("source", "note"):
        if body.get(k) is not None and not isinstance(body[k], str):
            raise SpecError(where, f"{key}.{k}", f"must be a string (got {body[k]!r})")
    conditions = _conditions(body.get("conditions"), f"{key}.conditions", where)
    written = f"{_show_raw(body['value'])} {body['unit']}"
    return Figure(
        fid,
        metric,
        value,
        unit,
        body[C.source],
        MappingProxyType(conditions),
        "cited",
        written,
        body.get("note") or "",
    )


def _unit(unit: Any, metric: str, key: str, where: str) -> tuple[str, float]:
    base = METRICS[metric].unit
    accepted = UNITS.get(base, {base: 1.0})
    if not isinstance(unit, str) or unit not in accepted:
        raise SpecError(
            where,
            key,
            f"{unit!r} is not a unit of {metric} ({base})",
            accepted=accepted,
            value=unit,
        )
    return base, accepted[unit]


def _value(value: Any, metric: str, factor: float, key: str, where: str) -> Any:
    unit = METRICS[metric].unit
    if unit == "bool":
        if not isinstance(value, bool):
            raise SpecError(
                where, key, f"must be true or false (got {value!r})", accepted=["true", "false"]
            )
        return value
    if unit == "ratios":
        if not isinstance(value, list) or not value:
            raise SpecError(
                where, key, f"must be a list of numbers, one per draft position (got {value!r})"
            )
        return tuple(_number(v, factor, key, where) for v in value)
    return _number(value, factor, key, where)


def _number(value: Any, factor: float, key: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(where, key, f"must be a finite number (got {value!r})")
    if value < 0:
        raise SpecError(where, key, f"must not be negative (got {value!r})")
    return float(value) * factor


def _conditions(raw: Any, key: str, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SpecError(where, key, "expected a mapping of condition -> value", accepted=CONDITIONS)
    for name, value in raw.items():
        if name not in CONDITIONS:
            raise SpecError(
                where, f"{key}.{_k(name)}", "unknown condition", accepted=CONDITIONS, value=name
            )
        if value is None:
            continue
        problem = check_value(name, value)
        if problem is not None:
            raise SpecError(where, f"{key}.{name}", problem[0], accepted=problem[1], value=value)
    if raw.get(C.drafter) == "none":
        for name in ("k", "drafter_config"):
            if raw.get(name) is not None:
                raise SpecError(
                    where, f"{key}.{name}", "means nothing with drafter none; write null or omit it"
                )
    return normalise(raw)


def _comparisons(raw: Any, figures: Mapping[str, Figure], where: str) -> tuple[ComparisonSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(where, "comparisons", "expected a list of {figures: [a, b], vary: [...]}")
    out = []
    for i, item in enumerate(raw):
        key = f"comparisons[{i}]"
        _known_keys(item, where, key, COMPARISON_KEYS)
        ids = item.get("figures")
        if (
            not isinstance(ids, list)
            or len(ids) != 2
            or any(not isinstance(x, (str, int)) for x in ids)
        ):
            raise SpecError(
                where, f"{key}.figures", "expected a list of two figure ids", accepted=figures
            )
        pair = (str(ids[0]), str(ids[1]))
        for fid in pair:
            if fid not in figures:
                raise SpecError(
                    where, f"{key}.figures", f"no figure {fid!r}", accepted=figures, value=fid
                )
        if pair[0] == pair[1]:
            raise SpecError(where, f"{key}.figures", "a figure compared with itself")
        vary = item.get("vary") or []
        if not isinstance(vary, list):
            raise SpecError(
                where, f"{key}.vary", "expected a list of condition names", accepted=CONDITIONS
            )
        for name in vary:
            if not isinstance(name, str) or name not in CONDITIONS:
                raise SpecError(
                    where,
                    f"{key}.vary",
                    f"unknown condition {name!r}",
                    accepted=CONDITIONS,
                    value=name,
                )
        note = item.get("note")
        if note is not None and not isinstance(note, str):
            raise SpecError(where, f"{key}.note", f"must be a string (got {note!r})")
        out.append(ComparisonSpec(pair, tuple(dict.fromkeys(vary)), note or ""))
    return tuple(out)


def _show_raw(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show_raw(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _k(part: Any) -> str:
    """A key as written, or its repr where it holds characters that would break the line."""
    text = str(part)
    return text if text.isprintable() and text.strip() == text and text else repr(text)
