"""specexp.runtimes.sim.memory: weights first, what is left at gpu_memory_utilization is KV;
a configuration that does not fit is refused at start, as a real engine refuses it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.base import RuntimeFailure, runtime_for
from specexp.runtimes.sim.costmodel import CostModel
from specexp.runtimes.sim.memory import memory_plan

Spec = Callable[..., Any]


def kv_tokens(make_spec: Spec, tmp_path: Path, *overrides: str) -> int:
    info = runtime_for("sim")(make_spec(*overrides), tmp_path).start()
    assert info.kv_cache_tokens is not None
    return info.kv_cache_tokens


def plan_of(spec: Any) -> Any:
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, spec.runtime.kv_cache_dtype)
    return memory_plan(spec, target, None)


def test_more_memory_utilization_gives_more_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    low = kv_tokens(make_spec, tmp_path, "runtime.gpu_memory_utilization=0.44")
    high = kv_tokens(make_spec, tmp_path, "runtime.gpu_memory_utilization=0.85")
    assert 0 < low < high


def test_kv_cache_is_the_budget_left_after_weights(make_spec: Spec) -> None:
    spec = make_spec("runtime.gpu_memory_utilization=0.5")
    plan = plan_of(spec)
    budget = spec.hardware.memory_gib * 1024**3 * 0.5
    assert plan.budget_bytes == pytest.approx(budget)
    assert 0 < plan.kv_bytes < budget - plan.weight_bytes
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    assert plan.kv_cache_tokens == int(plan.kv_bytes // target.kv_bytes_per_token)


def test_fp8_kv_cache_holds_about_twice_the_tokens(make_spec: Spec, tmp_path: Path) -> None:
    auto = kv_tokens(make_spec, tmp_path, "runtime.kv_cache_dtype=auto")
    fp8 = kv_tokens(make_spec, tmp_path, "runtime.kv_cache_dtype=fp8")
    assert fp8 == pytest.approx(2 * auto, rel=1e-6)


def test_lighter_weights_leave_more_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    bf16 = kv_tokens(make_spec, tmp_path, "quantization=bf16")
    fp8 = kv_tokens(make_spec, tmp_path, "quantization=fp8")
    assert fp8 > bf16


def test_weights_that_do_not_fit_are_refused_at_start(make_spec: Spec, tmp_path: Path) -> None:
    runtime = runtime_for("sim")(make_spec("hardware=cpu", "model=qwen3-32b", "quantization=bf16"), tmp_path)
    with pytest.raises(RuntimeFailure) as info:
        runtime.start()
    assert info.value.status == "refused"
    assert info.value.kind == "out_of_memory"
    assert "GiB" in info.value.message and "gpu_memory_utilization" in info.value.message


@pytest.mark.xfail(
    strict=True,
    reason="BUG: memory.memory_plan always adds a second copy of the embedding matrix "
    "(`if not tie_word_embeddings: weights += 0.0` is a no-op), so a tied model is charged twice",
)
def test_tied_embeddings_are_counted_once(make_spec: Spec) -> None:
    spec = make_spec("model=qwen3-8b")
    tied = spec.model_copy(update={"model": spec.model.model_copy(update={"tie_word_embeddings": True})})
    untied_weights, tied_weights = plan_of(spec).weight_bytes, plan_of(tied).weight_bytes
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    one_copy = target.shape.lm_head_params * spec.quantization.bytes_per_weight["embeddings"]
    assert untied_weights - tied_weights == pytest.approx(one_copy)


@pytest.mark.xfail(
    strict=True,
    reason="BUG: memory.memory_plan says 'weights and drafter first' but counts only a separate "
    "draft model; an MTP head or a DSpark/DFlash drafter takes no memory, so KV capacity is too high",
)
def test_a_drafter_takes_memory_from_the_kv_cache(make_spec: Spec, tmp_path: Path) -> None:
    none = kv_tokens(make_spec, tmp_path, "drafter=none")
    dspark = kv_tokens(make_spec, tmp_path, "drafter=dspark")
    assert dspark < none


@pytest.mark.xfail(
    strict=True,
    reason="BUG (calibration): studies.md gives 348,497 KV tokens for Qwen3.8-27B FP8 on the Spark at "
    "gpu_memory_utilization 0.44 without prefix caching; the simulator reports ~474k (+36 %): it budgets "
    "the nominal 128 GiB, not the ~119.7 GiB the GPU sees, and charges no drafter or engine reserve",
)
def test_kv_capacity_reproduces_the_published_spark_figure(make_spec: Spec, tmp_path: Path) -> None:
    tokens = kv_tokens(make_spec, tmp_path, "hardware=dgx_spark", "model=qwen3.8-27b", "quantization=fp8",
                       "runtime.gpu_memory_utilization=0.44", "runtime.prefix_caching=false")
    assert tokens == pytest.approx(348_497, rel=0.10)
