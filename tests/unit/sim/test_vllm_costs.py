"""The fixed costs of the `vllm` engine profile that a real vLLM on an H200 showed
(benchmarks/results/vllm_calibration.md): the laws they impose on what the simulator answers, whatever their fitted values."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.runtimes.base import runtime_for
from specexp.sim.kvcache import page_aligned_block
from specexp.sim.profile import load_profile
from specexp.sim.startup import plan_server
from specexp.workloads.driver import drive

Spec = Callable[..., Any]
H200_DENSE = ("hardware=h200", "model=qwen3-8b", "quantization=bf16", "runtime.engine=vllm")
H200_HYBRID = ("hardware=h200", "model=qwen3.8-27b", "quantization=bf16", "runtime.engine=vllm")


def windows(make_spec: Spec, tmp_path: Path, *overrides: str) -> list[Any]:
    spec = make_spec(*overrides)
    runtime = runtime_for("sim")(spec, tmp_path)
    runtime.start()
    return list(drive(runtime, spec.workload, marker="law"))


def median_ttft(window: Any) -> float:
    return statistics.median(t.token_events[0].t - t.sent_at for t in window.traces)


def test_a_bursts_ttft_grows_with_its_size_by_the_frontends_cost(
    make_spec: Spec, tmp_path: Path
) -> None:
    serial = load_profile("vllm").request_serial_ms / 1e3
    assert serial > 0
    burst = windows(
        make_spec,
        tmp_path,
        *H200_DENSE,
        "workload=concurrency",
        "workload.concurrency=[1,8,32]",
        "workload.prompt_tokens=32",
        "workload.output_tokens=4",
    )
    ttft = {w.point.concurrency: median_ttft(w) for w in burst}
    # every request of a burst waits for the frontend to have handled all of them
    assert ttft[8] - ttft[1] >= 7 * serial
    assert ttft[32] - ttft[8] >= 24 * serial


def test_the_warm_gain_is_bounded_by_the_warm_paths_fixed_cost(
    make_spec: Spec, tmp_path: Path
) -> None:
    profile = load_profile("vllm")
    spec = make_spec(
        *H200_HYBRID,
        "workload=prefix_cache",
        "workload.prompt_lengths=[16000,64000]",
        "runtime.max_model_len=70000",
    )
    layers = plan_server(spec).target.shape.linear_attention_layers
    fixed = (profile.request_overhead_ms + layers * profile.linear_prefill_layer_ms) / 1e3
    assert fixed > 0
    got = windows(
        make_spec,
        tmp_path,
        *H200_HYBRID,
        "workload=prefix_cache",
        "workload.prompt_lengths=[16000,64000]",
        "workload.repeats=1",
        "runtime.max_model_len=70000",
    )
    ttft = {(w.point.prompt_tokens, w.point.cache): median_ttft(w) for w in got}
    for n in (16000, 64000):
        warm = ttft[(n, "warm")]
        assert warm >= fixed  # however much of the prompt the cache serves
        assert ttft[(n, "cold")] / warm <= ttft[(n, "cold")] / fixed


def test_a_hybrid_models_block_is_vllms_page_aligned_one(make_spec: Spec) -> None:
    plain, mtp = (
        plan_server(make_spec(*H200_HYBRID, *extra)) for extra in ((), ("drafter=mtp", "k=3"))
    )
    assert (plain.layout.block_tokens, mtp.layout.block_tokens) == (
        784,
        800,
    )  # as vLLM 0.26 logged them
    target = plain.target
    bf16_state = page_aligned_block(target.shape, target.kv_bytes, "bfloat16", 0)
    assert bf16_state < 784 and bf16_state % 16 == 0  # half the state, about half the block
    assert plan_server(make_spec(*H200_DENSE)).layout.block_tokens == 16  # dense: vLLM's 16


def test_vllm_schedules_ngram_steps_without_overlapping_the_gpu(
    make_spec: Spec, tmp_path: Path
) -> None:
    profile = load_profile("vllm")
    assert "ngram" in profile.sync_scheduling_drafters and profile.sync_step_overhead_ms > 0
    assert (
        profile.step_overhead_s("ngram") - profile.step_overhead_s("mtp")
        == profile.sync_step_overhead_ms / 1e3
    )


def test_a_synchronous_step_costs_more_with_every_drafted_position() -> None:
    """vLLM's n-gram step grows with k on the H200 (8.4 ms at k = 2, 11.4 ms at k = 8, one stream): each
    drafted position of a synchronously scheduled step pays its CPU time; an overlapped drafter does not."""
    profile = load_profile("vllm")
    per_position = profile.sync_position_overhead_ms / 1e3
    assert per_position > 0
    assert profile.step_overhead_s("ngram", 8) - profile.step_overhead_s(
        "ngram", 2
    ) == pytest.approx(6 * per_position)
    assert profile.step_overhead_s("mtp", 8) == profile.step_overhead_s("mtp", 2)


def test_prefill_kernels_faster_than_the_hardware_files_never_pass_the_datasheet(
    make_spec: Spec,
) -> None:
    from specexp.sim.startup import prefill_hardware

    hw = make_spec(*H200_DENSE).hardware
    faster = prefill_hardware(hw, 1.3).achieved
    assert faster.compute == pytest.approx(min(hw.achieved.compute * 1.3, 1.0))
    assert faster.compute > hw.achieved.compute
    capped = prefill_hardware(hw, 2.0).achieved
    assert capped.compute <= 1.0 and capped.attention_compute <= 1.0
    assert all(f <= 1.0 for f in capped.compute_by_dtype.values())


def test_a_burst_past_the_steps_token_budget_queues_its_last_requests_in_vllms_own_queue(
    make_spec: Spec, tmp_path: Path
) -> None:
    # 32 prompts of 512 tokens against vLLM's budget of 8,192 tokens a step: the first wakes the idle
    # engine core and runs alone (request_serial_release first), the next fifteen or sixteen are
    # scheduled in the step after it, and the rest wait in the engine core's queue for that step
    (burst,) = windows(
        make_spec,
        tmp_path,
        *H200_DENSE,
        "workload=concurrency",
        "workload.concurrency=[32]",
        "workload.prompt_tokens=512",
        "workload.output_tokens=4",
        "runtime.max_num_batched_tokens=8192",
    )
    queue_ms = sorted(t.engine_timings["queue_time_ms"] for t in burst.traces)
    first_step = sum(q == 0 for q in queue_ms)
    assert 1 + 8192 // 512 - 1 <= first_step <= 1 + 8192 // 512
    assert queue_ms[-1] > 0
    ttft_ms = {
        t.engine_timings["queue_time_ms"]: (t.token_events[0].t - t.sent_at) * 1e3
        for t in burst.traces
    }
    assert all(q < ttft for q, ttft in ttft_ms.items())  # the queue is a part of the TTFT


def lone_prefill_ms(make_spec: Spec, tmp_path: Path, prompt: int, *overrides: str) -> float:
    (window,) = windows(
        make_spec,
        tmp_path,
        *H200_DENSE,
        "workload=prefill_sweep",
        f"workload.prompt_lengths=[{prompt}]",
        "workload.repeats=1",
        *overrides,
    )
    return median_ttft(window) * 1e3


def test_a_step_past_vllms_largest_cuda_graph_runs_kernel_by_kernel(
    make_spec: Spec, tmp_path: Path
) -> None:
    """vLLM 0.26 captures CUDA graphs for steps of up to 512 tokens by default: on the H200 a lone
    532-token prompt took 31 ms where one of 512 took 16-18 ms, and with graphs up to 1,024 tokens
    the 532-token one took 18 ms. The step past the graph pays its layers' kernel-by-kernel launches;
    a server given larger graphs (runtime.cuda_graph_max_tokens) does not."""
    profile = load_profile("vllm")
    assert profile.graph_max_tokens == 512 and profile.ungraphed_layer_us > 0
    launches_ms = 36 * profile.ungraphed_layer_us / 1e3  # the dense shape's 36 layers
    at, past = (lone_prefill_ms(make_spec, tmp_path, n) for n in (512, 532))
    assert past - at >= launches_ms
    graphs = "runtime.cuda_graph_max_tokens=1024"
    at_1k, past_1k = (lone_prefill_ms(make_spec, tmp_path, n, graphs) for n in (512, 532))
    assert past_1k - at_1k < launches_ms / 4
    assert at_1k == pytest.approx(at)


def events_of_first(tmp_path: Path, prompt: int, *overrides: str) -> list[float]:
    """A request decoding alone, and a `prompt`-token one arriving 100 ms later: the first request's
    token events (engine clock) from 60 ms before to 60 ms after the second arrives."""
    from specexp.measure.events import Request
    from specexp.runtimes.sim.driver import SimRuntime
    from tests.unit.sim.test_profiles import spec_of

    runtime = SimRuntime(spec_of(*H200_DENSE, *overrides), tmp_path)
    runtime.start()

    def request(name: str, tokens: int, at: float) -> Request:
        return Request(name, "x", prompt_tokens=tokens, max_tokens=64, send_at=at)

    first, _ = runtime.engine.run([request("decoding", 64, 0.0), request("new", prompt, 0.1)])
    return [e.t for e in first.token_events if 0.04 < e.t - first.sent_at < 0.16]


def test_a_steps_tokens_leave_once_the_next_step_is_launched(tmp_path: Path) -> None:
    """vLLM's engine core builds step N's outputs after launching step N + 1. A 600-token prompt joining
    a decoding request makes a 601-token step, past the largest CUDA graph: launched kernel by kernel,
    it holds back the token of the decode step before it, which leaves with the long step's own token
    (on the H200 both first tokens of a burst of two 512-token prompts leave together, 67-76 ms after
    it). A step within the graph (a 400-token prompt) holds nothing back: every gap is one pass."""
    assert load_profile("vllm").async_output

    def gaps(prompt: int, *overrides: str) -> list[float]:
        times = events_of_first(tmp_path, prompt, *overrides)
        return [b - a for a, b in zip(times, times[1:], strict=False)]

    past = gaps(600)
    assert min(past) < 1e-6  # the held token and the long step's own leave together
    within = gaps(400)
    assert min(within) > 0.003
    # n-gram is scheduled synchronously: each step's tokens leave when its pass ends
    assert min(gaps(600, "drafter=ngram", "k=2")) > 0.003
