"""The relevance table is data: every metric has one family, every condition a place, every
entry a reason; and the pitfalls of docs/studies.md are relevant where they can move a number."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.check.relevance import (
    DEPENDS_ON,
    FAMILIES,
    METRIC_FAMILY,
    NEVER_RELEVANT,
    SIMULATED_STANDS_IN,
    VARY_IMPLIES,
    expand_vary,
    relevance_table_md,
    relevant,
    relevant_to,
)
from specexp.spec.vocabulary import CONDITIONS, METRICS

REPO = Path(__file__).resolve().parents[3]


def test_every_metric_belongs_to_exactly_one_family() -> None:
    seen = [m for f in FAMILIES.values() for m in f.metrics]
    assert sorted(seen) == sorted(METRICS)
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_names_only_conditions_with_a_one_line_reason(family: str) -> None:
    f = FAMILIES[family]
    assert f.conditions, family
    for condition, why in f.conditions.items():
        assert condition in CONDITIONS
        assert condition not in NEVER_RELEVANT
        assert why.strip() and "\n" not in why and len(why) < 120, (family, condition)


def test_every_condition_can_move_some_metric_or_is_declared_irrelevant() -> None:
    used = {c for f in FAMILIES.values() for c in f.conditions}
    for c in CONDITIONS:
        assert (c in used) != (c in NEVER_RELEVANT), c


def test_the_side_tables_name_known_conditions() -> None:
    for table in (DEPENDS_ON, SIMULATED_STANDS_IN):
        assert set(table) <= set(CONDITIONS)
    assert set(DEPENDS_ON.values()) <= set(CONDITIONS)
    for parent, children in VARY_IMPLIES.items():
        assert parent in CONDITIONS and set(children) <= set(CONDITIONS)


# (metric, condition, relevant?) for each pitfall of docs/studies.md and the families the issue names.
CASES = [
    ("e2e_tps", "concurrency", True),
    ("aggregate_tps", "concurrency", True),
    ("decode_tps", "quantization", True),
    ("acceptance_rate", "quantization", True),
    ("decode_tps", "workload", True),
    ("acceptance_rate", "workload", True),
    ("e2e_tps", "output_tokens", True),
    ("e2e_tps", "cache", True),
    ("ttft_s", "cache", True),
    ("decode_tps", "cache", False),
    ("decode_tps", "drafter", True),
    ("decode_tps", "k", True),
    ("acceptance_rate", "k", True),
    ("prefill_tps", "runtime", True),
    ("prefill_tps", "runtime_version", True),
    ("decode_tps", "hardware", True),
    ("acceptance_rate", "hardware", False),
    ("decode_tps", "thinking", True),
    ("acceptance_rate", "thinking", True),
    ("ttft_s", "prompt_tokens", True),
    ("prefill_tps", "concurrency", True),
    ("ttft_s", "output_tokens", False),
    ("ttft_s", "k", False),
    ("ttft_s", "temperature", False),
    ("prefill_tps", "workload", False),
    ("kv_cache_tokens", "gpu_memory_utilization", True),
    ("kv_cache_tokens", "prefix_caching", True),
    ("decode_tps", "gpu_memory_utilization", False),
    ("aggregate_tps", "gpu_memory_utilization", True),
]


@pytest.mark.parametrize(("metric", "condition", "expected"), CASES)
def test_relevance_of_the_pitfalls(metric: str, condition: str, expected: bool) -> None:
    assert (condition in relevant(metric)) is expected


@pytest.mark.parametrize("metric", list(METRICS))
def test_source_and_repeats_never_count(metric: str) -> None:
    assert "source" not in relevant(metric) and "repeats" not in relevant(metric)


def test_relevant_to_is_the_union_in_vocabulary_order() -> None:
    union = relevant_to(["ttft_s", "decode_tps"])
    assert set(union) == set(relevant("ttft_s")) | set(relevant("decode_tps"))
    assert list(union) == [c for c in CONDITIONS if c in union]
    assert METRIC_FAMILY["per_stream_tps"].name == "aggregate"


def test_varying_the_drafter_varies_its_settings() -> None:
    assert expand_vary(["drafter"]) == {"drafter", "k", "drafter_config"}
    assert expand_vary(["k"]) == {"k"}


def test_docs_print_the_relevance_table_as_the_code_has_it() -> None:
    docs = (REPO / "docs/check.md").read_text(encoding="utf-8")
    assert relevance_table_md() in docs, (
        "regenerate the table in docs/check.md from relevance_table_md()"
    )
