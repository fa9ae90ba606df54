"""Runs from records in every shape a report holds; hand-edited or truncated records never
raise, they only contribute less."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from specexp.check import report_findings
from specexp.check.runs import runs_of
from specexp.report.tables import Row

COND = {"hardware": "dgx_spark", "model": "qwen3.8-27b", "quantization": "fp8", "drafter": "none", "k": None,
        "concurrency": 1, "source": "simulated"}


def test_the_shapes_a_report_holds(sim_results: list[tuple[Path, dict[str, Any]]]) -> None:
    path, record = sim_results[0]
    from_pairs = runs_of(sim_results[:1])
    from_records = runs_of([record])
    rows = [Row(record["run_id"], m["conditions"], m["metrics"]) for m in record["measurements"]]
    from_rows = runs_of(rows)
    lines = [{"run_id": record["run_id"], "status": "ok", "conditions": m["conditions"], "metrics": m["metrics"]}
             for m in record["measurements"]]
    assert [r.id for r in from_pairs] == [r.id for r in from_records] == [r.id for r in from_rows] == \
        [r.id for r in runs_of(lines)]
    assert from_pairs[0].link == str(path) and from_pairs[0].origin == "simulated"


def test_several_measurements_of_one_run_get_distinct_ids() -> None:
    record = {"run_id": "r", "status": "ok", "measurements": [{"conditions": COND, "metrics": {}}] * 3}
    assert [r.id for r in runs_of([record])] == ["r#0", "r#1", "r#2"]


def test_unfinished_runs_are_left_out() -> None:
    assert runs_of([{"run_id": "r", "status": "refused", "measurements": [{"conditions": COND}]}]) == []


def test_a_null_condition_is_unknown_but_k_of_no_drafter_is_known() -> None:
    (run,) = runs_of([{"run_id": "r", "conditions": {**COND, "runtime_version": None}, "metrics": {"decode_tps": 5}}])
    fig = run.figure("decode_tps")
    assert fig is not None and "runtime_version" not in fig.conditions and fig.conditions["k"] is None
    assert run.figure("e2e_tps") is None


_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                     max_leaves=10)
_conditions = st.dictionaries(st.sampled_from([*COND, "prompt_tokens", "cache", "workload", "tokens"]),
                              st.sampled_from([None, 1, 8, "fp8", "none", "mtp", "warm", "h100", 3.5, True]) | _json,
                              max_size=8)
_metrics = st.dictionaries(st.sampled_from(["decode_tps", "e2e_tps", "aggregate_tps", "ttft_s", "prefill_tps",
                                            "tokens_per_pass", "acceptance_by_position", "output_identical",
                                            "cached_prompt_tokens"]),
                           st.floats(allow_nan=True) | st.integers() | _json, max_size=5)
_record = st.fixed_dictionaries({}, optional={
    "run_id": _json, "status": st.sampled_from(["ok", "failed"]) | _json,
    "measurements": st.lists(st.fixed_dictionaries({}, optional={"conditions": _conditions | _json,
                                                                 "metrics": _metrics | _json}) | _json,
                             max_size=3) | _json,
    "conditions": _conditions, "metrics": _metrics,
})


@settings(max_examples=300, deadline=None)
@given(st.lists(_record | _json, max_size=4))
def test_fuzzed_records_never_raise(records: list[Any]) -> None:
    report = report_findings(records)
    report.to_json()
