"""output_identical is judged from records when they are read: a drafter run's completion
digests against its drafter=none baseline's, at temperature 0, by the one baseline rule."""

from __future__ import annotations

from typing import Any

from specexp.check.identity import output_identity
from specexp.record import Conditions, Measurement, Metrics, Provenance, RunRecord
from specexp.spec.vocabulary import NAMES

BASE = {
    "hardware": "cpu",
    "model": "tiny",
    "quantization": "f32",
    "runtime": "llamacpp",
    "workload": "fresh_generation@1",
    "temperature": 0.0,
    "concurrency": 1,
    "drafter": "none",
}


def record(run_id: str, completions: dict[str, str], status: str = "ok", **over: Any) -> RunRecord:
    c = Conditions(**{n: {**BASE, **over}.get(n) for n in NAMES})
    m = Measurement(conditions=c, metrics=Metrics(), completions=completions)
    return RunRecord(
        run_id=run_id,
        status=status,
        conditions=c,
        provenance=Provenance(),  # type: ignore[arg-type]
        measurements=[m],
    )


def test_same_digests_are_identical_and_a_different_one_is_not() -> None:
    base = record("base", {"r1": "aa", "r2": "bb"})
    same = record(
        "same", {"r1": "aa", "r2": "bb"}, drafter="mtp", k=3, runtime_version="other build"
    )
    differs = record("diff", {"r1": "aa", "r2": "XX"}, drafter="ngram", k=4)
    judged = output_identity([base, same, differs])
    assert judged == {("same", 0): True, ("diff", 0): False}


def test_no_baseline_no_judgment() -> None:
    assert output_identity([record("d", {"r1": "aa"}, drafter="mtp", k=3)]) == {}
    other_model = record("base", {"r1": "aa"}, model="small")
    assert output_identity([other_model, record("d", {"r1": "aa"}, drafter="mtp", k=3)]) == {}
    failed = record("base", {"r1": "aa"}, status="failed")
    assert output_identity([failed, record("d", {"r1": "aa"}, drafter="mtp", k=3)]) == {}


def test_sampling_above_zero_is_not_judged() -> None:
    base = record("base", {"r1": "aa"}, temperature=0.7)
    assert (
        output_identity([base, record("d", {"r1": "bb"}, drafter="mtp", k=3, temperature=0.7)])
        == {}
    )


def test_requests_not_shared_with_the_baseline_say_nothing() -> None:
    base = record("base", {"r1": "aa"})
    assert output_identity([base, record("d", {"r9": "zz"}, drafter="mtp", k=3)]) == {}
