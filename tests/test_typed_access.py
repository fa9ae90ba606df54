"""Metrics and conditions are read as typed attributes (`m.metrics.ttft_s`,
`run.conditions.drafter`), never by a string key outside the vocabulary module: a scan of the
package and the benchmarks for a vocabulary name used as a literal key on a record's metrics or
conditions, on a run, or on a record read as raw JSON.

A name held in a variable (a table's columns) is read with `.get(name)`, which refuses a name the
vocabulary does not define; a mapping that is not a record's (a cited figure's stated
conditions, a chart's data) is keyed with the vocabulary's `C.name` / `M.name`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from specexp.spec.vocabulary import CONDITIONS, METRICS

REPO = Path(__file__).resolve().parents[1]
NAMES = set(CONDITIONS) | set(METRICS)
RECORD_PARTS = {"metrics", "conditions", "spread", "samples"}
"""Attributes (or raw-JSON keys) that hold a record's figures by name."""
RECORDS = {"r", "row", "run", "base", "best", "cold", "warm", "record", "rec", "result", "measured"}
"""Variable names that hold one run or record throughout the code."""


def _holds_figures(receiver: ast.expr) -> bool:
    if isinstance(receiver, ast.Attribute):
        return receiver.attr in RECORD_PARTS
    if isinstance(receiver, ast.Subscript):
        return isinstance(receiver.slice, ast.Constant) and receiver.slice.value in RECORD_PARTS
    return isinstance(receiver, ast.Name) and receiver.id in RECORDS


def _string_keyed(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        receiver, key = None, None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            receiver, key = node.value, node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            receiver, key = node.func.value, node.args[0].value
        if receiver is not None and key in NAMES and _holds_figures(receiver):
            found.append((node.lineno, str(key)))
    return found


def _sources() -> list[Path]:
    files = [*REPO.glob("specexp/**/*.py"), *REPO.glob("benchmarks/**/*.py")]
    return [p for p in files if p != REPO / "specexp" / "spec" / "vocabulary.py"]


def test_the_scan_finds_string_keyed_access() -> None:
    code = 'x = m.metrics["ttft_s"]\ny = run.get("drafter")\nz = rec["measurements"][0]["conditions"].get("k")\n'
    assert [key for _, key in _string_keyed(ast.parse(code))] == ["ttft_s", "drafter", "k"]
    assert not _string_keyed(
        ast.parse('n = m.metrics.ttft_s\nv = run.get(column)\nd = {"k": 1}["k"]\n')
    )


def test_no_metric_or_condition_is_read_by_a_string_key() -> None:
    offending = [
        f"{path.relative_to(REPO)}:{line}: {key}"
        for path in _sources()
        for line, key in _string_keyed(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offending, (
        "read these as attributes (m.metrics.ttft_s, run.conditions.k):\n" + "\n".join(offending)
    )
