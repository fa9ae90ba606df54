"""Verdicts on pairs of figures: every rule, every pitfall of docs/studies.md, fair pairs that must
say nothing, and verdicts that do not depend on which figure comes first."""

from __future__ import annotations

from typing import Any

import pytest
from checkhelp import BASE, make_figure
from hypothesis import given, settings
from hypothesis import strategies as st

from specexp.check.fairness import compare, definition_mismatch, source_conflicts
from specexp.check.figures import Figure
from specexp.check.relevance import relevant
from specexp.spec.vocabulary import METRICS


def _noisy(c: Any) -> list[str]:
    return [f.rule for f in c.findings if f.severity in ("error", "warning")]


# Each pitfall of docs/studies.md "Pitfalls when comparing published figures": (what differs, a, b).
PITFALLS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("concurrency", {"concurrency": 1}, {"concurrency": 8}, "e2e_tps"),
    ("quantization", {"quantization": "fp8"}, {"quantization": "nvfp4"}, "e2e_tps"),
    ("workload", {"workload": "edit_heavy"}, {"workload": "fresh_generation"}, "e2e_tps"),
    ("output_tokens", {"output_tokens": 3000}, {"output_tokens": 400}, "e2e_tps"),
    ("cache", {"cache": "cold"}, {"cache": "warm"}, "ttft_s"),
    ("drafter", {"drafter": "mtp", "k": 3}, {"drafter": "none", "k": None}, "decode_tps"),
    ("drafter", {"drafter": "mtp", "k": 3}, {"drafter": "dspark", "k": 3}, "decode_tps"),
    ("k", {"k": 3}, {"k": 8}, "acceptance_rate"),
    ("runtime", {"runtime": "vllm"}, {"runtime": "llamacpp"}, "prefill_tps"),
    ("runtime_version", {"runtime_version": "0.10.1"}, {"runtime_version": "0.11.0"}, "ttft_s"),
    ("hardware", {"hardware": "dgx_spark"}, {"hardware": "rtx_a6000"}, "decode_tps"),
    ("thinking", {"thinking": False}, {"thinking": True}, "decode_tps"),
]


@pytest.mark.parametrize(
    ("condition", "a", "b", "metric"), PITFALLS, ids=[f"{p[0]}-{p[3]}" for p in PITFALLS]
)
def test_each_pitfall_is_a_confounder(
    condition: str, a: dict[str, Any], b: dict[str, Any], metric: str
) -> None:
    c = compare(make_figure("a", metric, **a), make_figure("b", metric, **b))
    assert c.verdict == "unfair"
    assert [d.condition for d in c.confounders] == [condition]
    d = c.confounders[0]
    assert d.values == (
        make_figure("a", metric, **a).conditions[condition],
        make_figure("b", metric, **b).conditions[condition],
    )
    (f,) = [f for f in c.findings if f.rule == "confounder"]
    assert f.severity == "error" and f.figures == ("a", "b") and f.condition == condition
    assert condition in f.expected and " vs " in f.found


@pytest.mark.parametrize(
    ("condition", "a", "b", "metric"), PITFALLS, ids=[f"{p[0]}-{p[3]}" for p in PITFALLS]
)
def test_each_pitfall_is_fair_when_it_is_what_the_comparison_varies(
    condition: str, a: dict[str, Any], b: dict[str, Any], metric: str
) -> None:
    c = compare(make_figure("a", metric, **a), make_figure("b", metric, **b), vary=[condition])
    assert c.verdict == "fair" and not _noisy(c)
    assert [d.condition for d in c.varied][:1] == [condition]


def test_metric_definition_mismatch_even_when_every_condition_matches() -> None:
    c = compare(make_figure("a", "e2e_tps"), make_figure("b", "decode_tps"))
    assert c.verdict == "unfair" and not c.confounders and not c.unknown
    assert c.metric_mismatch is not None and "prefill" in c.metric_mismatch
    assert [f.rule for f in c.findings if f.severity == "error"] == ["metric_mismatch"]


def test_an_aggregate_beside_a_single_stream() -> None:
    c = compare(
        make_figure("agg", "aggregate_tps", concurrency=8),
        make_figure("one", "e2e_tps", concurrency=1),
    )
    assert c.verdict == "unfair"
    assert c.metric_mismatch and "sums every concurrent stream" in c.metric_mismatch
    assert [d.condition for d in c.confounders] == ["concurrency"]


@pytest.mark.parametrize(
    "pair",
    [
        ("aggregate_tps", "per_stream_tps"),
        ("acceptance_rate", "tokens_per_pass"),
        ("decode_tps", "tpot_s"),
        ("ttft_s", "prefill_tps"),
        ("e2e_tps", "ttft_s"),
    ],
)
def test_every_metric_pair_explains_itself(pair: tuple[str, str]) -> None:
    text = definition_mismatch(*pair)
    assert text is not None and pair[0] in text and pair[1] in text
    assert definition_mismatch(pair[0], pair[0]) is None


def test_unknown_makes_it_unverifiable_and_names_who_states_it() -> None:
    c = compare(make_figure("a"), make_figure("b", drop=("concurrency", "cache")))
    assert c.verdict == "unverifiable"
    assert [(u.condition, u.stated_by, u.value) for u in c.unknown] == [
        ("concurrency", "a", 1),
        ("cache", "a", "cold"),
    ]
    assert {f.rule for f in c.findings} >= {"unknown_condition"}


def test_unstated_is_listed_and_does_not_change_the_verdict() -> None:
    c = compare(make_figure("a", drop=("thinking",)), make_figure("b", drop=("thinking",)))
    assert c.verdict == "fair"
    assert "thinking" in c.unstated
    (f,) = [f for f in c.findings if f.rule == "unstated_condition"]
    assert f.severity == "info" and "thinking" in f.found


def test_a_difference_that_cannot_move_the_metric_is_not_a_confounder() -> None:
    c = compare(
        make_figure("a", "ttft_s", output_tokens=3000, temperature=0.0),
        make_figure("b", "ttft_s", output_tokens=1, temperature=0.7),
    )
    assert c.verdict == "fair" and not _noisy(c)
    assert {d.condition for d in c.not_relevant} == {"output_tokens", "temperature"}


def test_k_is_not_compared_across_different_drafters() -> None:
    c = compare(make_figure("a", drafter="mtp", k=3), make_figure("b", drafter="dspark", k=7))
    assert [d.condition for d in c.confounders] == ["drafter"]
    c = compare(make_figure("a", drafter="mtp", k=3), make_figure("b", drafter="none", k=None))
    assert [d.condition for d in c.confounders] == ["drafter"]


def test_drafter_none_on_both_sides_has_no_unknown_k() -> None:
    a = make_figure("a", drafter="none", drop=("k",))
    b = make_figure("b", drafter="none", drop=("k",))
    c = compare(a, b)
    assert c.verdict == "fair" and "k" not in c.unstated and not c.unknown


def test_prompt_lengths_a_few_tokens_apart_are_the_same() -> None:
    assert (
        compare(make_figure("a", prompt_tokens=6387), make_figure("b", prompt_tokens=6391)).verdict
        == "fair"
    )
    assert (
        compare(make_figure("a", prompt_tokens=6387), make_figure("b", prompt_tokens=8000)).verdict
        == "unfair"
    )


def test_a_workload_without_version_matches_any_version() -> None:
    assert (
        compare(
            make_figure("a", workload="edit_heavy"), make_figure("b", workload="edit_heavy@1")
        ).verdict
        == "fair"
    )
    c = compare(
        make_figure("a", workload="edit_heavy@1"), make_figure("b", workload="edit_heavy@2")
    )
    assert c.verdict == "unfair"


FAIR_PAIRS: list[tuple[dict[str, Any], dict[str, Any], str, list[str]]] = [
    ({}, {}, "e2e_tps", []),
    ({"drafter": "dspark", "k": 7}, {"drafter": "mtp", "k": 3}, "e2e_tps", ["drafter"]),
    ({"quantization": "fp8"}, {"quantization": "nvfp4"}, "decode_tps", ["quantization"]),
    ({"concurrency": 1}, {"concurrency": 8}, "aggregate_tps", ["concurrency"]),
    ({"cache": "cold"}, {"cache": "warm"}, "ttft_s", ["cache"]),
    (
        {"runtime": "vllm", "runtime_version": "0.10"},
        {"runtime": "sglang", "runtime_version": "0.5"},
        "prefill_tps",
        ["runtime", "runtime_version"],
    ),
    (
        {"hardware": "dgx_spark", "gpu_memory_utilization": 0.44},
        {"hardware": "rtx_a6000", "gpu_memory_utilization": 0.9},
        "decode_tps",
        ["hardware"],
    ),
]


@pytest.mark.parametrize(("a", "b", "metric", "vary"), FAIR_PAIRS)
def test_fair_pairs_produce_no_warning(
    a: dict[str, Any], b: dict[str, Any], metric: str, vary: list[str]
) -> None:
    extra = {
        c: v
        for c, v in (
            ("gpu_count", 1),
            ("gpu_shared", False),
            ("kv_cache_dtype", "auto"),
            ("runtime_version", "x"),
            ("ignore_eos", True),
            ("prefix_caching", True),
            ("drafter_config", "chain"),
        )
    }
    c = compare(
        make_figure("a", metric, **{**extra, **a}), make_figure("b", metric, **{**extra, **b}), vary
    )
    assert c.verdict == "fair"
    assert not c.findings or all(f.severity == "info" for f in c.findings)


def test_source_conflict_same_figure_two_quantizations() -> None:
    a = make_figure("text", "decode_tps", 29.5, source="blog B", quantization="nvfp4")
    b = make_figure("caption", "decode_tps", 29.5, source="Blog  B ", quantization="fp8")
    (f,) = source_conflicts([a, b])
    assert f.rule == "source_conflict" and f.severity == "error" and f.condition == "quantization"
    assert set(f.figures) == {"text", "caption"} and "nvfp4" in f.found and "fp8" in f.found


def test_one_source_with_several_configurations_is_not_a_conflict() -> None:
    a = make_figure("fp8", "decode_tps", 22.0, source="blog B", quantization="fp8")
    b = make_figure("nvfp4", "decode_tps", 29.5, source="blog B", quantization="nvfp4")
    assert source_conflicts([a, b]) == []


def test_one_source_two_values_nothing_stated_apart_is_a_warning() -> None:
    a = make_figure("x", "decode_tps", 22.0, source="blog B")
    b = make_figure("y", "decode_tps", 29.5, source="blog B")
    (f,) = source_conflicts([a, b])
    assert f.rule == "source_value_conflict" and f.severity == "warning"


def test_different_sources_never_conflict() -> None:
    a = make_figure("x", "decode_tps", 29.5, source="blog A", quantization="fp8")
    b = make_figure("y", "decode_tps", 29.5, source="blog B", quantization="nvfp4")
    assert source_conflicts([a, b]) == []


# Property tests: random figures, random vary; the verdict does not depend on the order.
_values: dict[str, Any] = {
    "hardware": st.sampled_from(["dgx_spark", "rtx_a6000", "h200"]),
    "quantization": st.sampled_from(["fp8", "nvfp4", "bf16"]),
    "drafter": st.sampled_from(["none", "mtp", "dspark"]),
    "k": st.sampled_from([3, 7]),
    "concurrency": st.sampled_from([1, 8]),
    "cache": st.sampled_from(["cold", "warm"]),
    "workload": st.sampled_from(["edit_heavy", "edit_heavy@1", "fresh_generation"]),
    "prompt_tokens": st.sampled_from([6387, 6390, 10000]),
    "thinking": st.booleans(),
    "temperature": st.sampled_from([0.0, 0.7]),
    "runtime": st.sampled_from(["vllm", "sglang"]),
}


@st.composite
def figures(draw: st.DrawFn, fid: str) -> Figure:
    metric = draw(st.sampled_from(sorted(METRICS)))
    conditions = {}
    for name, strategy in _values.items():
        if draw(st.booleans()):
            conditions[name] = draw(strategy)
    if conditions.get("drafter") == "none":
        conditions.pop("k", None)
    drop = tuple(c for c in BASE if c not in conditions)
    return make_figure(fid, metric, drop=drop, **conditions)


@settings(max_examples=300, deadline=None)
@given(figures("a"), figures("b"), st.lists(st.sampled_from(list(_values)), max_size=3))
def test_the_verdict_does_not_depend_on_the_order(a: Figure, b: Figure, vary: list[str]) -> None:
    ab, ba = compare(a, b, vary), compare(b, a, vary)
    assert ab.verdict == ba.verdict
    assert (
        ab.metric_mismatch is None if ba.metric_mismatch is None else ab.metric_mismatch is not None
    )
    assert [(d.condition, d.values) for d in ab.confounders] == [
        (d.condition, d.values[::-1]) for d in ba.confounders
    ]
    assert {(u.condition, u.stated_by) for u in ab.unknown} == {
        (u.condition, u.stated_by) for u in ba.unknown
    }
    assert ab.unstated == ba.unstated
    assert sorted(f.rule for f in ab.findings) == sorted(f.rule for f in ba.findings)


@settings(max_examples=200, deadline=None)
@given(figures("a"), figures("b"))
def test_confounders_unknowns_and_unstated_only_name_relevant_conditions(
    a: Figure, b: Figure
) -> None:
    c = compare(a, b)
    names = (
        [d.condition for d in c.confounders] + [u.condition for u in c.unknown] + list(c.unstated)
    )
    allowed = set(relevant(a.metric)) | set(relevant(b.metric))
    assert set(names) <= allowed
    assert len(names) == len(set(names))
    assert (c.verdict == "fair") == (
        not c.confounders and not c.unknown and c.metric_mismatch is None
    )


@settings(max_examples=100, deadline=None)
@given(figures("a"))
def test_a_figure_compared_with_a_copy_of_itself_is_never_unfair(a: Figure) -> None:
    b = Figure("b", a.metric, a.value, a.unit, a.source, a.conditions, a.origin)
    assert compare(a, b).verdict in ("fair", "unverifiable")
    assert not compare(a, b).unknown
