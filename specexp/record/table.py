"""A sweep's measurements as one flat table: a row per measurement, a column per condition,
metric and judgment, each column typed from the vocabulary.

The rows are the lines of results.jsonl (`results_lines`), flattened: `run_id`, `status`, then
every condition and metric by its own name, then the judgments made on reading the records
(every field of `result_line.Judgments`: the baseline and the speedup over it, the sampled and
scored verdicts; `output_identical` is a metric already). `specexp.results.load` returns it as a typed
pandas DataFrame; `python -m specexp.report --format csv|jsonl` writes it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any, get_args, get_origin

from specexp.record.result_line import Judgments, ResultLine
from specexp.spec.vocabulary import CONDITIONS, METRICS

_KINDS: Mapping[Any, str] = {str: "str", int: "int", float: "float", bool: "bool", list: "list"}


def judgment_types() -> dict[str, str]:
    """The read-time judgments beside the metrics (specexp.check.judgments), by their column type,
    read from the `Judgments` model: each is one type or null."""
    out = {}
    for name, field in Judgments.model_fields.items():
        (kind,) = (get_origin(a) or a for a in get_args(field.annotation) if a is not type(None))
        out[name] = _KINDS[kind]
    return out


def column_types() -> dict[str, str]:
    """Every column in order, with its type: str, int, float, bool, or list (a metric per position)."""
    types: dict[str, str] = {"run_id": "str", "status": "str"}
    for c in CONDITIONS.values():
        types[c.name] = {int: "int", float: "float", bool: "bool"}.get(c.type, "str")
    for m in METRICS.values():
        types[m.name] = "bool" if m.unit == "bool" else "list" if m.unit == "ratios" else "float"
    for name, kind in judgment_types().items():
        types.setdefault(name, kind)
    return types


def flat_rows(lines: Sequence[ResultLine]) -> list[dict[str, Any]]:
    """results.jsonl lines as flat rows, every column present (null where a line has no value)."""
    columns = column_types()
    rows = []
    for line in lines:
        row: dict[str, Any] = {name: None for name in columns}
        row["run_id"], row["status"] = line.run_id, line.status
        parts = (
            line.conditions.model_dump(),
            line.metrics.model_dump() if line.metrics is not None else {},
            line.judgments.model_dump() if line.judgments is not None else {},
        )
        for part in parts:
            for name, value in part.items():
                if name in columns:
                    row[name] = value
        rows.append(row)
    return rows


def to_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The flat rows as CSV: a list (acceptance by position) is written as JSON in its cell."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(column_types()), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})
    return out.getvalue()


def to_jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)
