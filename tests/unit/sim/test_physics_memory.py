"""Physics of device memory at start: what fits, what the engine reports, when it refuses.

Laws: KV capacity is what gpu_memory_utilization leaves after weights and activations,
divided by the bytes of one cached token; a server refuses to start exactly when one request
of max_model_len does not fit; context is native or YaRN-extended, and a drafter without
YaRN caps it (or, with YaRN on, stops the server).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import Request, RuntimeFailure
from specexp.run.compose import load_option
from specexp.runtimes.sim.driver import SimRuntime
from specexp.spec.experiment import (
    DrafterSpec,
    ExperimentSpec,
    ModelSpec,
    QuantizationSpec,
    RuntimeSpec,
    WorkloadSpec,
)
from specexp.spec.hardware import HardwareSpec

GIB = 1024**3


def spec(
    hardware: str = "dgx_spark",
    model: str = "qwen3.8-27b",
    quantization: str = "fp8",
    drafter: str = "none",
    k: int | None = None,
    model_update: dict[str, Any] | None = None,
    **runtime: Any,
) -> ExperimentSpec:
    def opt(cls: type, group: str, name: str) -> Any:
        return load_option(cls, group, name, group)

    m = opt(ModelSpec, "model", model)
    return ExperimentSpec(
        hardware=opt(HardwareSpec, "hardware", hardware),
        model=m.model_copy(update=model_update or {}),
        quantization=opt(QuantizationSpec, "quantization", quantization),
        runtime=opt(RuntimeSpec, "runtime", "sim").model_copy(update=runtime),
        drafter=opt(DrafterSpec, "drafter", drafter),
        workload=opt(WorkloadSpec, "workload", "fresh_generation"),
        k=k,
    )


def start(s: ExperimentSpec, tmp_path: Path) -> SimRuntime:
    runtime = SimRuntime(s, tmp_path)
    runtime.info = runtime.start()  # type: ignore[attr-defined]
    return runtime


def kv_tokens(s: ExperimentSpec, tmp_path: Path) -> int:
    tokens = start(s, tmp_path).info.kv_cache_tokens  # type: ignore[attr-defined]
    assert tokens
    return int(tokens)


def refused(s: ExperimentSpec, tmp_path: Path) -> RuntimeFailure:
    with pytest.raises(RuntimeFailure) as failure:
        SimRuntime(s, tmp_path).start()
    assert failure.value.status == "refused"
    return failure.value


def kv_bytes_per_token_by_hand(m: ModelSpec, bytes_per_element: float = 2.0) -> float:
    hybrid = m.architecture == "hybrid"
    full = (
        m.num_hidden_layers // (m.full_attention_interval or 1) if hybrid else m.num_hidden_layers
    )
    return 2 * full * m.num_key_value_heads * m.head_dim * bytes_per_element


def test_kv_capacity_grows_by_the_freed_memory_over_the_bytes_of_a_token(tmp_path: Path) -> None:
    base = dict(hardware="h200", model="qwen3-8b", quantization="bf16", prefix_caching=False)
    low = kv_tokens(spec(**base, gpu_memory_utilization=0.5), tmp_path)
    high = kv_tokens(spec(**base, gpu_memory_utilization=0.9), tmp_path)
    h200 = spec(**base).hardware
    seen = (h200.engine_memory_gib or h200.memory_gib) * GIB
    assert seen <= h200.memory_gib * GIB
    expected = 0.4 * seen / kv_bytes_per_token_by_hand(spec(**base).model)
    assert high - low == pytest.approx(expected, abs=2)


def test_fp8_kv_cache_doubles_a_dense_models_capacity(tmp_path: Path) -> None:
    base = dict(hardware="h200", model="qwen3-8b", quantization="bf16")
    auto = kv_tokens(spec(**base, kv_cache_dtype="auto"), tmp_path)
    fp8 = kv_tokens(spec(**base, kv_cache_dtype="fp8"), tmp_path)
    assert fp8 == pytest.approx(2 * auto, abs=2)


def test_weights_and_drafters_come_out_of_the_kv_cache(tmp_path: Path) -> None:
    none = kv_tokens(spec(), tmp_path)
    assert kv_tokens(spec(quantization="bf16"), tmp_path) < none
    assert kv_tokens(spec(drafter="mtp", k=3), tmp_path) < none
    assert kv_tokens(spec(drafter="dspark", k=7), tmp_path) < kv_tokens(
        spec(drafter="mtp", k=3), tmp_path
    )


def test_prefix_caching_costs_a_hybrid_model_kv_capacity_but_not_a_dense_one(
    tmp_path: Path,
) -> None:
    # Hybrid: the linear-attention state is kept at block-aligned points of every cached prefix.
    off = kv_tokens(spec(prefix_caching=False), tmp_path)
    on = kv_tokens(spec(prefix_caching=True), tmp_path)
    assert on < 0.9 * off
    # A runtime version whose cache never hits still pays for it.
    broken = kv_tokens(
        spec(prefix_caching=True, version="0.10.1", prefix_cache_broken_versions=["0.10.*"]),
        tmp_path,
    )
    assert broken == on
    dense = dict(hardware="h200", model="qwen3-8b", quantization="bf16")
    assert kv_tokens(spec(**dense, prefix_caching=True), tmp_path) == kv_tokens(
        spec(**dense, prefix_caching=False), tmp_path
    )


def test_a_dense_server_starts_exactly_when_max_model_len_fits_its_kv_cache(tmp_path: Path) -> None:
    # vLLM's rule: one request of max_model_len must fit in the KV cache. With no recurrent state,
    # the boundary is the reported capacity itself.
    base = dict(
        hardware="rtx_a6000", model="qwen3-8b", quantization="bf16", gpu_memory_utilization=0.5
    )
    capacity = kv_tokens(spec(**base, max_model_len=1024), tmp_path)
    assert 1024 < capacity < 40_960
    assert kv_tokens(spec(**base, max_model_len=capacity), tmp_path) == capacity
    failure = refused(spec(**base, max_model_len=capacity + 1), tmp_path)
    assert failure.kind == "kv_cache_too_small"
    assert "GiB" in failure.message and "gpu_memory_utilization 0.5" in failure.message
    assert f"{capacity + 1:,}" in failure.message


def test_the_studys_mtp_k8_server_at_044_is_refused_while_k3_starts(tmp_path: Path) -> None:
    # docs/studies.md: an MTP k = 8 server at gpu_memory_utilization 0.44 needs more KV than is available.
    k3 = start(spec(drafter="mtp", k=3, gpu_memory_utilization=0.44), tmp_path)
    assert k3.info.kv_cache_tokens  # type: ignore[attr-defined]
    failure = refused(spec(drafter="mtp", k=8, gpu_memory_utilization=0.44), tmp_path)
    assert failure.kind == "kv_cache_too_small"
    needed, available = (
        float(x.split(" GiB")[0].split()[-1].lstrip("("))
        for x in (failure.message.split("needs ")[1], failure.message.split("memory (")[1])
    )
    assert needed > available > 0
    # The same server starts with more memory.
    assert start(spec(drafter="mtp", k=8, gpu_memory_utilization=0.85), tmp_path)


def test_refusal_moves_monotonically_with_memory(tmp_path: Path) -> None:
    def starts(util: float) -> bool:
        try:
            SimRuntime(spec(drafter="mtp", k=8, gpu_memory_utilization=util), tmp_path).start()
            return True
        except RuntimeFailure:
            return False

    results = [starts(u / 100) for u in range(30, 90, 2)]
    first = results.index(True)
    assert not any(results[:first]) and all(results[first:])


def test_weights_that_do_not_fit_are_refused_out_of_memory(tmp_path: Path) -> None:
    failure = refused(spec(hardware="rtx_a6000", model="qwen3-32b", quantization="bf16"), tmp_path)
    assert failure.kind == "out_of_memory" and "GiB" in failure.message


def test_yarn_extends_context_but_a_drafter_without_yarn_fails_at_start(tmp_path: Path) -> None:
    native = spec(hardware="h200").model.max_position_embeddings
    yarn = {"yarn_factor": 2.0}
    long = start(spec(hardware="h200", model_update=yarn), tmp_path)
    assert long.engine.memory is not None and long.engine.memory.max_model_len == 2 * native
    assert start(spec(hardware="h200", drafter="mtp", k=3, model_update=yarn), tmp_path)
    failure = refused(spec(hardware="h200", drafter="dspark", k=7, model_update=yarn), tmp_path)
    assert "YaRN" in failure.message and "max_position_embeddings" in failure.message


def test_a_drafter_without_yarn_caps_the_context(tmp_path: Path) -> None:
    d = spec(drafter="dspark").drafter
    assert d.max_context and not d.supports_yarn
    runtime = start(
        spec(
            hardware="h200",
            model="qwen3-8b",
            quantization="bf16",
            drafter="dspark",
            k=7,
            model_update={"max_position_embeddings": 2 * d.max_context},
        ),
        tmp_path,
    )
    assert (
        runtime.engine.memory is not None and runtime.engine.memory.max_model_len == d.max_context
    )
    assert "capped" in runtime.info.details["context_note"]  # type: ignore[attr-defined]


def test_a_request_beyond_max_model_len_is_answered_with_an_error(tmp_path: Path) -> None:
    runtime = start(spec(hardware="h200", max_model_len=4096), tmp_path)
    ok, too_long = runtime.run_window(
        [
            Request(request_id="ok", prompt="x", prompt_tokens=1000, max_tokens=100),
            Request(request_id="long", prompt="x", prompt_tokens=4000, max_tokens=100),
        ]
    )
    assert ok.error is None and ok.completion_tokens == 100
    assert too_long.error and "max_model_len" in too_long.error and not too_long.events


def test_max_model_len_beyond_the_models_context_is_refused(tmp_path: Path) -> None:
    native = spec().model.max_position_embeddings
    assert refused(spec(max_model_len=native + 1), tmp_path).kind == "max_model_len_too_large"
