"""specexp.sim.memory_plan: weights first, what is left at gpu_memory_utilization is KV;
a configuration that does not fit is refused at start, as a real engine refuses it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import RuntimeFailure
from specexp.roofline.costmodel import CostModel
from specexp.runtimes.base import runtime_for
from specexp.sim.memory_plan import memory_plan

Spec = Callable[..., Any]


def kv_tokens(make_spec: Spec, tmp_path: Path, *overrides: str) -> int:
    info = runtime_for("sim")(make_spec(*overrides), tmp_path).start()
    assert info.kv_cache_tokens is not None
    return info.kv_cache_tokens


def plan_of(spec: Any) -> Any:
    target = CostModel.build(
        spec.hardware, spec.model, spec.quantization, spec.runtime.kv_cache_dtype
    )
    return memory_plan(spec, target, None)


def test_more_memory_utilization_gives_more_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    low = kv_tokens(make_spec, tmp_path, "runtime.gpu_memory_utilization=0.44")
    high = kv_tokens(make_spec, tmp_path, "runtime.gpu_memory_utilization=0.85")
    assert 0 < low < high


def test_kv_cache_is_the_budget_left_after_weights(make_spec: Spec) -> None:
    spec = make_spec("runtime.gpu_memory_utilization=0.5")
    plan = plan_of(spec)
    seen = spec.hardware.engine_memory_gib or spec.hardware.memory_gib
    assert plan.budget_bytes == pytest.approx(seen * 1024**3 * 0.5)
    assert 0 < plan.kv_bytes < plan.budget_bytes - plan.weight_bytes
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    assert 0 < plan.kv_cache_tokens * target.kv_bytes_per_token <= plan.kv_bytes


def test_fp8_kv_cache_holds_about_twice_the_tokens(make_spec: Spec, tmp_path: Path) -> None:
    dense = ("model=qwen3-8b", "runtime.prefix_caching=false")
    auto = kv_tokens(make_spec, tmp_path, *dense, "runtime.kv_cache_dtype=auto")
    fp8 = kv_tokens(make_spec, tmp_path, *dense, "runtime.kv_cache_dtype=fp8")
    assert fp8 == pytest.approx(2 * auto, rel=1e-5)


def test_lighter_weights_leave_more_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    bf16 = kv_tokens(make_spec, tmp_path, "quantization=bf16")
    fp8 = kv_tokens(make_spec, tmp_path, "quantization=fp8")
    assert fp8 > bf16


def test_weights_that_do_not_fit_are_refused_at_start(make_spec: Spec, tmp_path: Path) -> None:
    runtime = runtime_for("sim")(
        make_spec("hardware=cpu", "model=qwen3-32b", "quantization=bf16"), tmp_path
    )
    with pytest.raises(RuntimeFailure) as info:
        runtime.start()
    assert info.value.status == "refused"
    assert info.value.kind == "out_of_memory"
    assert "GiB" in info.value.message and "gpu_memory_utilization" in info.value.message


def test_tied_embeddings_are_counted_once(make_spec: Spec) -> None:
    spec = make_spec("model=qwen3-8b")
    tied = spec.model_copy(
        update={"model": spec.model.model_copy(update={"tie_word_embeddings": True})}
    )
    untied_weights, tied_weights = plan_of(spec).weight_bytes, plan_of(tied).weight_bytes
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    one_copy = target.shape.lm_head_params * spec.quantization.bytes_per_weight["embeddings"]
    assert untied_weights - tied_weights == pytest.approx(one_copy)


def test_a_drafter_takes_memory_from_the_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    none = kv_tokens(make_spec, tmp_path, "drafter=none")
    dspark = kv_tokens(make_spec, tmp_path, "drafter=dspark")
    assert dspark < none


# docs/studies.md, "Facts to use as inputs": KV cache capacity reported for the FP8 model on the Spark:
# 348,497 tokens at gpu_memory_utilization 0.44 without prefix caching, 271,315 with it (MTP k = 3).
SPARK = (
    "hardware=dgx_spark",
    "model=qwen3.8-27b",
    "quantization=fp8",
    "drafter=mtp",
    "k=3",
    "runtime.gpu_memory_utilization=0.44",
)


@pytest.mark.parametrize(("prefix_caching", "published"), [("false", 348_497), ("true", 271_315)])
def test_kv_capacity_reproduces_the_published_spark_figures(
    make_spec: Spec, tmp_path: Path, prefix_caching: str, published: int
) -> None:
    tokens = kv_tokens(make_spec, tmp_path, *SPARK, f"runtime.prefix_caching={prefix_caching}")
    assert tokens == pytest.approx(published, rel=0.03)


def test_mtp_k8_at_044_is_refused_for_want_of_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    # docs/studies.md, failure modes: "an MTP k = 8 server at gpu_memory_utilization 0.44 needing more KV
    # than available" refuses to start.
    spec = make_spec(*[o for o in SPARK if o != "k=3"], "k=8")
    with pytest.raises(RuntimeFailure) as info:
        runtime_for("sim")(spec, tmp_path).start()
    assert info.value.status == "refused"
    assert "KV cache" in info.value.message
