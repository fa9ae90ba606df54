"""The record's `Conditions` and `Metrics` as Python source, written from the vocabulary: every
condition and metric a typed field a type checker sees (`specexp/record/fields.py`, written by
`scripts/record-fields`; `tests/unit/test_record_fields.py` fails when the two differ)."""

from __future__ import annotations

from specexp.spec.vocabulary import CONDITIONS, METRICS

HEADER = '''"""Every condition and every metric of docs/vocabulary.md as a typed field of the record.

Written by `scripts/record-fields` from specexp/spec/vocabulary.py (specexp.record.generate): do not
edit by hand; a test fails when it and the vocabulary differ."""

from __future__ import annotations

from specexp.record.named import Named
'''

METRIC_TYPES = {"bool": "bool | None", "ratios": "list[float] | None", "tok": "int | float | None"}
"""A metric's Python type by its unit; every other unit is a float."""


def fields_module() -> str:
    """The source of specexp/record/fields.py."""
    lines = [HEADER, "", "class Conditions(Named):"]
    lines.append(
        '    """Every condition of the vocabulary, each present (null when unknown, never omitted;\n'
        '    records written before a condition was added read it as null)."""'
    )
    lines.append("")
    for c in CONDITIONS.values():
        default = " = None" if c.absent_is_null else ""
        lines.append(f"    {c.name}: {c.type.__name__} | None{default}")
    lines += ["", "", "class Metrics(Named):"]
    lines.append('    """Every metric of the vocabulary; null where a run has no value for it."""')
    lines.append("")
    for m in METRICS.values():
        lines.append(f"    {m.name}: {METRIC_TYPES.get(m.unit, 'float | None')} = None")
    return "\n".join(lines) + "\n"
