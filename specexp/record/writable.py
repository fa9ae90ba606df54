"""A record made writable before it is written: text that encodes as UTF-8, numbers JSON can hold.

A value that came from a server can be neither: a lone UTF-16 surrogate in an error body, NaN in a
timing. Such text is repaired (U+FFFD for what cannot be a character) and such a number becomes
unknown (null), with a note naming where; what is left must pass the reader's own rules
(specexp.record.store.parse_record) or nothing is written.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from specexp.record.schema import RunRecord

SHOWN = 4
"""Places named in the note on non-finite numbers."""
ATTEMPTS = 8
"""Rounds of leaving out what cannot be unknown, before a record is given up as unwritable."""


def writable(record: RunRecord) -> RunRecord:
    """`record` with every string UTF-8-encodable and every non-finite float null (and a note)."""
    data = record.model_dump(mode="python", by_alias=True)
    dropped: list[str] = []
    clean = _clean(data, "", dropped)
    if clean == data and not dropped:
        return record
    if dropped:
        where = ", ".join(dropped[:SHOWN]) + (
            f" and {len(dropped) - SHOWN} more" if len(dropped) > SHOWN else ""
        )
        clean["notes"] = [
            *clean.get("notes", []),
            f"{len(dropped)} value(s) were NaN or ±Inf and are recorded as unknown: {where}",
        ]
    return _validated(clean)


def _validated(data: dict[str, Any]) -> RunRecord:
    """The record of `data`; where a place cannot be unknown (a [min, max] pair, a required
    number), the smallest part around it is left out, until the record validates."""
    for _ in range(ATTEMPTS):
        try:
            return RunRecord.model_validate(data)
        except ValidationError as err:
            for error in err.errors():
                loc = tuple(error["loc"])
                _drop(data, loc[:-1] if error["type"] == "missing" else loc)
    return RunRecord.model_validate(data)  # raises: what is left is not a record


def _drop(data: Any, loc: tuple[Any, ...]) -> None:
    """Remove the innermost mapping entry on the path `loc` (a list holds its places)."""
    parents: list[tuple[dict[str, Any], str]] = []
    node = data
    for key in loc:
        if isinstance(node, dict) and key in node:
            parents.append((node, key))
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            break
    if parents:
        parent, key = parents[-1]
        del parent[key]


def _clean(value: Any, where: str, dropped: list[str]) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        dropped.append(where or "(top)")
        return None
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {
            encodable(str(k)): _clean(v, f"{where}.{k}" if where else str(k), dropped)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_clean(v, f"{where}[{i}]", dropped) for i, v in enumerate(value)]
    return value


def encodable(text: str) -> str:
    """`text` as a string that encodes as UTF-8: surrogate pairs joined, lone ones replaced."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
