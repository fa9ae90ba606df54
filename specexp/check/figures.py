"""Cited figures: the YAML of docs/vocabulary.md section 4, validated once into frozen values.

Every problem is a `SpecError`: one line naming the file, the key (``figures.ID.KEY``) and
the accepted values; a file's every problem is reported at once, one line each. A figure keeps only the conditions it states; a condition it omits (or
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
from specexp.spec.errors import Mistakes, SpecError, did_you_mean
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

    `extra_keys` are top-level keys to ignore (an experiment file's own keys). Every mistake of
    the file is reported at once, one line each.
    """
    if not isinstance(data, Mapping):
        raise SpecError(
            where, "figures", "expected a mapping with a 'figures' key", accepted=TOP_KEYS
        )
    mistakes = Mistakes()
    own = {k: v for k, v in data.items() if k not in extra_keys}
    meant = _unknown_keys(own, where, "", TOP_KEYS, mistakes)
    raw = data.get("figures")
    if not isinstance(raw, Mapping) or not raw:
        if "figures" not in meant:
            mistakes.add(
                SpecError(where, "figures", "missing, empty or not a mapping of id -> figure")
            )
        mistakes.raise_any()
    assert isinstance(raw, Mapping)  # a missing or misspelt `figures` was noted, and raised
    figures: dict[str, Figure] = {}
    written: list[str] = []
    for fid, body in raw.items():
        if isinstance(fid, bool) or not isinstance(fid, (str, int)) or not str(fid).strip():
            mistakes.add(
                SpecError(where, f"figures.{_k(fid)}", "a figure id must be a non-empty string")
            )
        elif str(fid) in written:
            mistakes.add(SpecError(where, f"figures.{_k(fid)}", "id written twice"))
        else:
            written.append(str(fid))
            with mistakes.noted():
                figures[str(fid)] = _figure(str(fid), body, where)
    comparisons: tuple[ComparisonSpec, ...] = ()
    with mistakes.noted():
        comparisons = _comparisons(data.get("comparisons"), written, where)
    mistakes.raise_any()
    return FigureSet(where, MappingProxyType(figures), comparisons)


def _unknown_keys(
    body: Mapping[Any, Any], where: str, key: str, accepted: Sequence[str], mistakes: Mistakes
) -> set[str]:
    """Note each key of `body` not in `accepted`; return the accepted keys they look like
    misspellings of (whose absence is the same mistake, not another)."""
    meant = set()
    for k in body:
        if k not in accepted:
            name = f"{key}.{_k(k)}" if key else _k(k)
            mistakes.add(SpecError(where, name, "unknown key", accepted=accepted, value=k))
            meant.add(did_you_mean(k, accepted))
    return {m for m in meant if m is not None}


def _known_keys(body: Any, where: str, key: str, accepted: Sequence[str]) -> None:
    """`body` must be a mapping whose keys are all in `accepted`."""
    if not isinstance(body, Mapping):
        raise SpecError(where, key, "expected a mapping", accepted=accepted)
    mistakes = Mistakes()
    _unknown_keys(body, where, key, accepted, mistakes)
    mistakes.raise_any()


def _figure(fid: str, body: Any, where: str) -> Figure:
    key = f"figures.{_k(fid)}"
    if not isinstance(body, Mapping):
        raise SpecError(where, key, "expected a mapping", accepted=FIGURE_KEYS)
    mistakes = Mistakes()
    meant = _unknown_keys(body, where, key, FIGURE_KEYS, mistakes)
    for k in REQUIRED_KEYS:
        if body.get(k) is None and not (k in meant and k not in body):
            mistakes.add(SpecError(where, f"{key}.{k}", "missing value"))
    metric, unit, factor, value = body.get("metric"), body.get("unit"), None, body.get("value")
    if metric is not None and (not isinstance(metric, str) or metric not in METRICS):
        mistakes.add(
            SpecError(
                where, f"{key}.metric", f"unknown metric {metric!r}", accepted=METRICS, value=metric
            )
        )
    elif metric is not None and unit is not None:
        with mistakes.noted():
            unit, factor = _unit(unit, metric, f"{key}.unit", where)
            if value is not None:
                value = _value(value, metric, factor, f"{key}.value", where)
    for k in ("source", "note"):
        if body.get(k) is not None and not isinstance(body[k], str):
            mistakes.add(SpecError(where, f"{key}.{k}", f"must be a string (got {body[k]!r})"))
    conditions: dict[str, Any] = {}
    with mistakes.noted():
        conditions = _conditions(body.get("conditions"), f"{key}.conditions", where)
    mistakes.raise_any()
    assert isinstance(metric, str) and isinstance(unit, str)  # checked above, or raised
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
    mistakes = Mistakes()
    for name, value in raw.items():
        if name not in CONDITIONS:
            mistakes.add(
                SpecError(
                    where, f"{key}.{_k(name)}", "unknown condition", accepted=CONDITIONS, value=name
                )
            )
            continue
        problem = check_value(name, value) if value is not None else None
        if problem is not None:
            mistakes.add(
                SpecError(where, f"{key}.{name}", problem[0], accepted=problem[1], value=value)
            )
    if raw.get(C.drafter) == "none":
        for name in ("k", "drafter_config"):
            if raw.get(name) is not None:
                mistakes.add(
                    SpecError(
                        where,
                        f"{key}.{name}",
                        "means nothing with drafter none; write null or omit it",
                    )
                )
    mistakes.raise_any()
    return normalise(raw)


def _comparisons(raw: Any, ids: Sequence[str], where: str) -> tuple[ComparisonSpec, ...]:
    """The comparisons of a file whose figures have ids `ids` (those written, valid or not)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SpecError(where, "comparisons", "expected a list of {figures: [a, b], vary: [...]}")
    mistakes = Mistakes()
    out = []
    for i, item in enumerate(raw):
        with mistakes.noted():
            out.append(_comparison(f"comparisons[{i}]", item, ids, where))
    mistakes.raise_any()
    return tuple(out)


def _comparison(key: str, item: Any, ids: Sequence[str], where: str) -> ComparisonSpec:
    _known_keys(item, where, key, COMPARISON_KEYS)
    named = item.get("figures")
    if (
        not isinstance(named, list)
        or len(named) != 2
        or any(not isinstance(x, (str, int)) for x in named)
    ):
        raise SpecError(where, f"{key}.figures", "expected a list of two figure ids", accepted=ids)
    pair = (str(named[0]), str(named[1]))
    for fid in pair:
        if fid not in ids:
            raise SpecError(where, f"{key}.figures", f"no figure {fid!r}", accepted=ids, value=fid)
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
    return ComparisonSpec(pair, tuple(dict.fromkeys(vary)), note or "")


def _show_raw(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show_raw(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _k(part: Any) -> str:
    """A key as written, or its repr where it holds characters that would break the line."""
    text = str(part)
    return text if text.isprintable() and text.strip() == text and text else repr(text)
