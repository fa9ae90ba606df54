"""SGLang prefills kernel by kernel with an EAGLE-style drafter (docs/engines.md 2.6): its prefill graphs
are captured without the target's hidden states, which EAGLE-3 and MTP take from every prefill."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.base import runtime_for
from specexp.sim.profile import load_profile
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures/engines/sglang/h200-0.5.12"
SGLANG_DENSE = ("hardware=h200", "model=qwen3-8b", "quantization=bf16", "runtime.engine=sglang")


def ttft_ms(make_spec: Spec, tmp_path: Path, *drafter: str) -> dict[str, float]:
    """The median time to first token of a 3,700-token prefix sent cold and then warm, ms."""
    spec = make_spec(
        *SGLANG_DENSE,
        "workload=prefix_cache",
        "workload.prompt_lengths=[3700]",
        "workload.repeats=1",
        *drafter,
    )
    runtime = runtime_for("sim")(spec, tmp_path)
    runtime.start()
    return {
        w.point.cache: 1e3 * statistics.median(t.token_events[0].t - t.sent_at for t in w.traces)
        for w in drive(runtime, spec.workload, marker="g")
    }


def test_a_warm_hits_short_prefill_waits_on_its_launches_with_eagle3_but_not_with_a_draft_model(
    make_spec: Spec, tmp_path: Path
) -> None:
    profile = load_profile("sglang")
    assert {"eagle", "eagle3", "mtp"} <= set(profile.ungraphed_prefill_drafters)
    assert "draft_model" not in profile.ungraphed_prefill_drafters
    launches = 36 * profile.ungraphed_prefill_layer_us / 1e3  # the dense shape's 36 layers
    plain = ttft_ms(make_spec, tmp_path / "none")
    eagle = ttft_ms(make_spec, tmp_path / "eagle3", "drafter=eagle3", "k=3")
    draft = ttft_ms(make_spec, tmp_path / "draft", "drafter=draft_model", "k=3")
    # a warm hit's short prefill waits on its launch: the batch built (prefill_launch_ms) and, with
    # EAGLE-3, its layers launched one by one besides. Measured on the H200 (2026-12-05b), EAGLE-3's warm
    # hits took 17.3 ms more, which the profile takes, while its bursts formed their second batch 4.8 ms
    # later (benchmarks/results/sglang_waves.md, docs/engines.md 2.6, 2.9). Its cold 3,700-token prefill
    # came within 2 ms of the drafter-less one, whose kernels outlast their launches (the simulator adds
    # EAGLE-3's head's own prefill: within 5 %)
    assert eagle["warm"] - plain["warm"] == pytest.approx(launches, rel=0.05)
    assert abs(eagle["cold"] - plain["cold"]) < 0.05 * plain["cold"]
    assert abs(draft["warm"] - plain["warm"]) < launches / 4


def lone_prefill_ms(make_spec: Spec, tmp_path: Path, prompts: list[int]) -> list[float]:
    """The hybrid's time to first token of one prompt at a time, ms, by prompt length."""
    spec = make_spec(
        "hardware=h200",
        "model=qwen3.8-27b",
        "quantization=bf16",
        "runtime.engine=sglang",
        "workload=prefill_sweep",
        f"workload.prompt_lengths=[{','.join(map(str, prompts))}]",
        "workload.repeats=1",
    )
    runtime = runtime_for("sim")(spec, tmp_path)
    runtime.start()
    return [
        1e3 * statistics.median(t.token_events[0].t - t.sent_at for t in w.traces)
        for w in drive(runtime, spec.workload, marker="h")
    ]


def test_a_hybrid_prefill_takes_the_longer_of_its_launches_and_its_kernels(
    make_spec: Spec, tmp_path: Path
) -> None:
    # SGLang runs the hybrid's every prefill kernel by kernel: on the H200 a 512-token prompt reached
    # its first token in 109 ms and a 1,024-token one in 101 ms (both held up by their launches), a
    # 2,048-token one in 180 ms (by its kernels)
    profile = load_profile("sglang")
    assert profile.prefill_launches_overlap
    launches = 48 * profile.linear_prefill_layer_ms + 16 * profile.ungraphed_prefill_layer_us / 1e3
    short, one_k, two_k, four_k = lone_prefill_ms(make_spec, tmp_path, [256, 1024, 2048, 4096])
    assert launches < short < launches + 20  # the launches and the front end
    assert one_k - short < launches / 4
    assert 1.6 < four_k / two_k < 2.4  # past the launches, the kernels' own growth


def test_sglangs_prefill_graphs_reach_their_token_limit_whatever_the_batch_and_the_draft() -> None:
    # SGLang's /server_info: piecewise_cuda_graph_max_tokens 8192 with max_running_requests 48 and
    # EAGLE-3 at 3/1/4 (tests/fixtures/engines/sglang/h200-0.5.12/server_info.json)
    info = json.loads((FIXTURES / "server_info.json").read_text())
    sglang, vllm = load_profile("sglang"), load_profile("vllm")
    assert sglang.graph_max_tokens == info["piecewise_cuda_graph_max_tokens"]
    for k in (0, 1, 3, 7):
        assert sglang.graph_cap(info["max_running_requests"], k, 8192) == 8192
    # vLLM caps its own default by the batch and the draft (config/vllm.py _set_cudagraph_sizes)
    assert vllm.graph_max_tokens is not None
    assert vllm.graph_cap(4, 1, 8192) == min(vllm.graph_max_tokens, 2 * 4 * 2)
