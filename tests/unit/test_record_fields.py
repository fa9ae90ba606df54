"""The record's Conditions and Metrics are classes written from the vocabulary (scripts/record-fields):
every condition and metric is a typed field a type checker sees, and none is missing or extra."""

from __future__ import annotations

from pathlib import Path

from specexp.record import Conditions, Metrics
from specexp.record.generate import fields_module
from specexp.spec.vocabulary import CONDITIONS, METRICS

FIELDS = Path(__file__).resolve().parents[2] / "specexp" / "record" / "fields.py"


def test_the_record_fields_are_written_from_the_vocabulary() -> None:
    assert FIELDS.read_text(encoding="utf-8") == fields_module(), "run scripts/record-fields"


def test_every_condition_and_metric_is_a_field_in_the_vocabularys_order() -> None:
    assert list(Conditions.model_fields) == list(CONDITIONS)
    assert list(Metrics.model_fields) == list(METRICS)
    required = {n for n, f in Conditions.model_fields.items() if f.is_required()}
    assert required == {c.name for c in CONDITIONS.values() if not c.absent_is_null}
    assert not any(f.is_required() for f in Metrics.model_fields.values())
