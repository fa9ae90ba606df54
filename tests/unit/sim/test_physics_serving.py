"""Physics of serving: prefix-cache reuse, speed limits, and speculation under load.

The simulated server is driven through the workload driver like a real one, and its figures
are held to laws: a warm prefix beats a cold one by more the longer it is, reuse happens in
whole blocks, no stream decodes faster than the weights can be read, and deep drafts stop
paying once verification makes the passes compute-bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import Request
from specexp.measure.metrics import window_metrics
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
from specexp.workloads.driver import Window, drive


def opt(cls: type, group: str, name: str) -> Any:
    return load_option(cls, group, name, group)


def spec(
    hardware: str = "dgx_spark",
    model: str = "qwen3.8-27b",
    quantization: str = "fp8",
    drafter: str = "none",
    k: int | None = None,
    workload: str = "fresh_generation",
    work: dict[str, Any] | None = None,
    draft_model: str | None = None,
    **runtime: Any,
) -> ExperimentSpec:
    return ExperimentSpec(
        hardware=opt(HardwareSpec, "hardware", hardware),
        model=opt(ModelSpec, "model", model),
        quantization=opt(QuantizationSpec, "quantization", quantization),
        runtime=opt(RuntimeSpec, "runtime", "sim").model_copy(update=runtime),
        drafter=opt(DrafterSpec, "drafter", drafter),
        workload=opt(WorkloadSpec, "workload", workload).model_copy(update=work or {}),
        k=k,
        draft_model=opt(ModelSpec, "model", draft_model) if draft_model else None,
    )


def run(s: ExperimentSpec, tmp_path: Path) -> list[Window]:
    runtime = SimRuntime(s, tmp_path)
    runtime.start()
    return list(drive(runtime, s.workload, marker="physics"))


def metrics(w: Window, prefill_only: bool = False) -> dict[str, Any]:
    return window_metrics(w.traces, w.delta, prefill_only=prefill_only)


HYBRID_LENGTHS = [3700, 16500, 64500]
"""Prompt lengths whose shared prefix (all but a 16-token suffix) ends inside a cache block of
both 224 and 1,600 tokens."""
DENSE_LENGTHS = [3700, 16500, 36000]
"""Within Qwen3-8B's 40,960-token context."""


def cold_warm(s: ExperimentSpec, tmp_path: Path) -> list[tuple[float, float, int]]:
    """(cold TTFT, warm TTFT, warm cached tokens) per prompt length."""
    windows = run(s, tmp_path)
    out = []
    for cold, warm in zip(windows[::2], windows[1::2], strict=True):
        assert (cold.point.cache, warm.point.cache) == ("cold", "warm")
        assert not any(t.error for t in cold.traces + warm.traces)
        cached = warm.traces[0].cached_prompt_tokens or 0
        out.append((metrics(cold, True)["ttft_s"], metrics(warm, True)["ttft_s"], cached))
    return out


def prefix_spec(
    hardware: str = "dgx_spark",
    model: str = "qwen3.8-27b",
    quantization: str = "fp8",
    drafter: str = "none",
    k: int | None = None,
    lengths: list[int] = HYBRID_LENGTHS,
    **runtime: Any,
) -> ExperimentSpec:
    return spec(
        hardware,
        model,
        quantization,
        drafter,
        k,
        workload="prefix_cache",
        work={"prompt_lengths": lengths, "repeats": 1},
        **runtime,
    )


@pytest.mark.parametrize(
    ("hardware", "model", "quantization", "drafter", "k", "lengths"),
    [
        (
            "dgx_spark",
            "qwen3.8-27b",
            "fp8",
            "none",
            None,
            HYBRID_LENGTHS,
        ),  # hybrid, 784-token blocks
        (
            "dgx_spark",
            "qwen3.8-27b",
            "fp8",
            "mtp",
            3,
            HYBRID_LENGTHS,
        ),  # hybrid with MTP, 800-token blocks
        ("h200", "qwen3-8b", "bf16", "none", None, DENSE_LENGTHS),  # dense, 16-token blocks
    ],
)
def test_warm_beats_cold_and_the_gain_grows_with_prefix_length(
    tmp_path: Path,
    hardware: str,
    model: str,
    quantization: str,
    drafter: str,
    k: int | None,
    lengths: list[int],
) -> None:
    from specexp.sim.startup import plan_server

    s = prefix_spec(hardware, model, quantization, drafter, k, lengths)
    rows = cold_warm(s, tmp_path)
    block = plan_server(s).layout.block_tokens  # vLLM's page-aligned block on a hybrid model
    for (cold, warm, cached), length in zip(rows, lengths, strict=True):
        assert warm < cold
        assert 0 < cached < length and cached % block == 0
        if not k:  # every whole block of the shared prefix is reused
            assert (length - 16) // block * block == cached
        else:  # MTP gives up the last matched block, and resumes from the last state kept before it
            assert cached <= (length - 16) // block * block - block
    gains = [cold / warm for cold, warm, _ in rows]
    if not k:
        assert gains == sorted(gains) and gains[-1] > 2 * gains[0]
    else:  # a state only at chunk ends: the hit can fall back a whole chunk (on an H200 vLLM 0.26 resumed
        # 2,400 of 3,720 tokens, nothing of 8,020, 8,000 of 16,020: benchmarks/results/gpu-h200-vllm.md)
        assert all(g > 1 for g in gains)


def test_reuse_is_block_granular(tmp_path: Path) -> None:
    rows = cold_warm(
        prefix_spec("h200", "qwen3-8b", "bf16", lengths=DENSE_LENGTHS, cache_block_tokens=1000),
        tmp_path,
    )
    # The shared prefix is the prompt less a 16-token suffix: reuse rounds it down to whole blocks.
    assert [cached for _, _, cached in rows] == [(n - 16) // 1000 * 1000 for n in DENSE_LENGTHS]


@pytest.mark.parametrize(
    "runtime",
    [
        {"prefix_caching": False},
        {"version": "0.10.1", "prefix_cache_broken_versions": ["0.10.1"]},  # on, but never hits
    ],
)
def test_no_cache_or_a_cache_that_never_hits_gives_no_warm_gain(
    tmp_path: Path, runtime: dict[str, Any]
) -> None:
    for cold, warm, cached in cold_warm(prefix_spec(**runtime), tmp_path):
        assert cached == 0
        assert warm == pytest.approx(cold)


def weight_bytes_by_hand(m: ModelSpec, bytes_per_weight: float) -> float:
    q, kv = m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    layer = 2 * m.hidden_size * q + 2 * m.hidden_size * kv + 3 * m.hidden_size * m.intermediate_size
    return (m.num_hidden_layers * layer + m.vocab_size * m.hidden_size) * bytes_per_weight


@pytest.mark.parametrize("hardware", ["h200", "dgx_spark", "rtx_a6000"])
@pytest.mark.parametrize(
    ("drafter", "k", "draft_model"),
    [
        ("none", None, None),
        ("ngram", 4, None),
        ("eagle3", 3, None),
        ("draft_model", 5, "qwen3-0.6b"),
    ],
)
def test_no_stream_decodes_faster_than_bandwidth_over_bytes_times_tokens_per_pass(
    tmp_path: Path, hardware: str, drafter: str, k: int | None, draft_model: str | None
) -> None:
    for workload, concurrency in (("edit_heavy", 1), ("concurrency", 4)):
        s = spec(
            hardware,
            "qwen3-8b",
            "bf16",
            drafter,
            k,
            workload=workload,
            draft_model=draft_model,
            work={"output_tokens": 200, "concurrency": [concurrency]},
        )
        [window] = run(s, tmp_path)
        m = metrics(window)
        model = s.model
        kv_per_token = 2 * model.num_hidden_layers * model.num_key_value_heads * model.head_dim * 2
        per_pass = (
            weight_bytes_by_hand(model, 2.0) + concurrency * s.workload.prompt_tokens * kv_per_token
        )
        passes_per_s = s.hardware.memory_bandwidth_gbps * 1e9 / per_pass
        tokens_per_pass = m["tokens_per_pass"] or 1.0
        assert m["aggregate_tps"] <= passes_per_s * concurrency * tokens_per_pass
        if concurrency == 1:
            assert m["decode_tps"] <= passes_per_s * tokens_per_pass


def test_deep_drafts_stop_paying_under_concurrency(tmp_path: Path) -> None:
    conc = [1, 8, 128]

    def aggregate(drafter: str, k: int | None) -> list[float]:
        s = spec("h200", "qwen3-8b", "bf16", drafter, k, work={"concurrency": conc, "warmup": 0})
        return [metrics(w)["aggregate_tps"] for w in run(s, tmp_path)]

    base = aggregate("none", None)
    shallow = [a / b for a, b in zip(aggregate("eagle3", 3), base, strict=True)]
    deep = [a / b for a, b in zip(aggregate("eagle3", 8), base, strict=True)]
    assert deep[0] > 1.5 and shallow[0] > 1.5  # alone, speculation pays
    assert deep[-1] < 1  # under load, verifying 9 tokens per stream costs more than it saves
    assert deep[-1] < shallow[-1]  # and the deeper draft loses first
    assert deep[2] < deep[1]


def test_kv_capacity_limits_concurrency(tmp_path: Path) -> None:
    # Six requests at once into a pool that holds only a few of them whole: the rest wait.
    s = spec("rtx_a6000", "qwen3-8b", "bf16", gpu_memory_utilization=0.5, max_model_len=16384)
    runtime = SimRuntime(s, tmp_path)
    info = runtime.start()
    assert info.kv_cache_tokens
    prompt, output = 15_000, 100
    fit = info.kv_cache_tokens // (prompt + output)
    assert 1 <= fit < 6
    traces = runtime.run_window(
        [
            Request(request_id=f"r{i}", prompt="x", prompt_tokens=prompt, max_tokens=output)
            for i in range(6)
        ]
    )
    assert not any(t.error for t in traces)
    spans = sorted((t.first_token_at, t.last_token_at) for t in traces)
    finished = sorted(end for _, end in spans)
    # Request i + fit cannot begin decoding before the i-th earliest request has freed its KV.
    for i in range(6 - fit):
        assert spans[i + fit][0] >= finished[i]  # type: ignore[operator]
