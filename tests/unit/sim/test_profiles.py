"""Engine profiles (runtime=sim runtime.engine=...) and the studies' calibration facts: the laws
the profiles' costs must obey, and that a record says which profile and calibration it rests on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specexp.fit import spark
from specexp.measure.conditions import run_conditions
from specexp.measure.metrics import window_metrics
from specexp.record import Provenance, RunRecord
from specexp.report.method import _simulated_engines
from specexp.roofline.costmodel import Slice
from specexp.run.compose import build_spec
from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.profile import load_profile
from specexp.sim.startup import start_engine
from specexp.spec.errors import SpecError
from specexp.spec.experiment import ExperimentSpec
from specexp.workloads.driver import drive

H200_8B = ["hardware=h200", "model=qwen3-8b", "quantization=bf16", "drafter=none"]


def spec_of(*overrides: str) -> ExperimentSpec:
    return build_spec(list(overrides))


def windows(spec: ExperimentSpec, tmp_path: Path) -> tuple[SimRuntime, list[Any]]:
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    return runtime, list(drive(runtime, spec.workload, marker="t"))


def per_stream(spec: ExperimentSpec, tmp_path: Path) -> dict[int, float]:
    _, ws = windows(spec, tmp_path)
    return {
        w.point.concurrency: window_metrics(w.traces, w.delta, prefill_only=False)["decode_tps"]
        for w in ws
    }


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp"])
def test_every_engine_the_spec_accepts_has_a_valid_profile_whose_figures_cite_a_source(
    engine: str,
) -> None:
    from specexp.spec import paths

    profile = load_profile(engine)
    assert profile.name == engine
    text = (paths.conf_dir() / "sim_engine" / f"{engine}.yaml").read_text()
    for name in ("step_overhead_ms", "seq_overhead_ms", "prefill_compute", "request_overhead_ms"):
        line = next(line for line in text.splitlines() if line.startswith(f"{name}:"))
        assert "#" in line or "source: fit" in text, name


def test_the_default_profile_is_vllm_and_a_record_names_it(tmp_path: Path) -> None:
    runtime = SimRuntime(spec_of(*H200_8B), tmp_path)
    info = runtime.start()
    assert info.details["engine_profile"] == "vllm" and "vllm" in (info.version or "")
    llama = SimRuntime(spec_of(*H200_8B, "runtime.engine=llamacpp"), tmp_path).start()
    assert llama.details["engine_profile"] == "llamacpp" and "llamacpp" in (llama.version or "")


def test_an_unknown_engine_is_refused_naming_the_accepted_ones() -> None:
    with pytest.raises(SpecError) as err:
        spec_of("runtime.engine=vlm")
    text = str(err.value)
    assert "runtime.engine" in text and "llamacpp" in text and "sglang" in text


def _record(spec: Any, details: dict[str, Any]) -> RunRecord:
    return RunRecord(
        run_id="r",
        status="ok",
        conditions=run_conditions(spec, "simulated"),
        provenance=Provenance(engine_info=details),
    )


def test_a_profile_without_a_calibration_for_the_device_says_uncalibrated(tmp_path: Path) -> None:
    results = []
    for hw in ("dgx_spark", "rtx_a6000", "h200"):
        spec = spec_of(
            f"hardware={hw}", "model=qwen3-8b", "quantization=bf16", "runtime.engine=sglang"
        )
        info = SimRuntime(spec, tmp_path).start()
        results.append(_record(spec, info.details))
    lines = _simulated_engines(results)
    # sglang is calibrated on the H200 only (benchmarks/results/sglang_calibration.md); lines sort by device
    assert len(lines) == 3 and ["**uncalibrated**" in line for line in lines] == [
        True,
        False,
        True,
    ]  # sorted by device
    spec = spec_of(*H200_8B)
    vllm = SimRuntime(spec, tmp_path).start()
    assert "uncalibrated" not in _simulated_engines([_record(spec, vllm.details)])[0]


def test_a_per_slot_cost_makes_per_stream_decode_fall_with_slots(tmp_path: Path) -> None:
    concurrency = "workload.concurrency=[1,4,16]"
    common = [
        *H200_8B,
        "workload=concurrency",
        concurrency,
        "workload.output_tokens=64",
        "workload.prompt_tokens=256",
        "workload.warmup=0",
    ]
    llama = per_stream(spec_of(*common, "runtime.engine=llamacpp"), tmp_path)
    vllm = per_stream(spec_of(*common), tmp_path)
    assert llama[1] > llama[4] > llama[16]
    # the fall beyond vLLM's is at least the sampler's serial time per extra slot and step
    s = load_profile("llamacpp").seq_overhead_ms / 1e3
    for c in (4, 16):
        extra = (1 / llama[c] - 1 / llama[1]) - (1 / vllm[c] - 1 / vllm[1])
        assert extra >= (c - 1) * s * 0.99


def with_profile(spec: ExperimentSpec, tmp_path: Path, **figures: Any) -> SimRuntime:
    """A simulated server whose engine profile is runtime.engine's with `figures` changed."""
    runtime = SimRuntime(spec, tmp_path)
    _, runtime.engine = start_engine(
        spec, load_profile(spec.runtime.engine).model_copy(update=figures)
    )
    return runtime


def test_prefill_micro_batches_never_make_a_prefill_faster(tmp_path: Path) -> None:
    common = [
        *H200_8B,
        "workload=prefill_sweep",
        "workload.prompt_lengths=[1024,8192]",
        "runtime.engine=llamacpp",
    ]
    spec = spec_of(*common)
    ttft = {}
    for name, ubatch in (("micro", 512), ("whole", None)):
        runtime = with_profile(spec, tmp_path, prefill_ubatch_tokens=ubatch)
        ttft[name] = [
            window_metrics(w.traces, w.delta, prefill_only=True)["ttft_s"]
            for w in drive(runtime, spec.workload, marker="t")
        ]
    assert all(m > w for m, w in zip(ttft["micro"], ttft["whole"], strict=True))


@pytest.mark.parametrize("engine", ["vllm", "llamacpp"])
def test_warm_gain_is_bounded_by_the_fixed_and_tail_costs(engine: str, tmp_path: Path) -> None:
    spec = spec_of(
        "hardware=dgx_spark",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=none",
        "workload=prefix_cache",
        "workload.prompt_lengths=[3700,32000]",
        "workload.repeats=1",
        f"runtime.engine={engine}",
    )
    runtime, ws = windows(spec, tmp_path)
    engine_ = runtime.engine
    p = engine_.profile
    by = {(w.point.prompt_tokens, w.point.cache): w.traces[0] for w in ws}
    for tokens in (3700, 32000):
        cold, warm = by[(tokens, "cold")], by[(tokens, "warm")]
        cached = warm.cached_prompt_tokens or 0
        assert 0 < cached < tokens
        tail = engine_.passes.prefill_target.pass_seconds(
            [Slice(tokens=tokens - cached, context=cached, logits=1)]
        )
        fixed = (
            p.request_overhead_ms + tokens * p.request_overhead_us_per_token / 1e3
        )  # cached tokens pay it too
        floor = tail + (fixed + p.step_overhead_ms + p.seq_overhead_ms) / 1e3
        warm_ttft = warm.events[0].t - warm.sent_at
        cold_ttft = cold.events[0].t - cold.sent_at
        assert warm_ttft >= floor * 0.999
        assert cold_ttft / warm_ttft <= cold_ttft / floor * 1.001


def test_the_quantization_advantage_shrinks_as_batches_become_compute_bound() -> None:
    from specexp.roofline.costmodel import CostModel
    from specexp.run.compose import load_option
    from specexp.spec.experiment import QuantizationSpec

    spec, fp8 = spark._spark()
    q = load_option(QuantizationSpec, "quantization", "nvfp4", "quantization")
    nvfp4 = CostModel.build(spec.hardware, spec.model, q, "auto")

    def step(batch: int) -> list[Slice]:
        return [Slice(tokens=1, context=400, logits=1)] * batch

    def advantage(a: CostModel, b: CostModel, batch: int) -> float:
        return a.pass_seconds(step(batch)) / b.pass_seconds(step(batch))

    by_batch = spark.nvfp4_advantage((1, 2, 4, 8, 16, 32))
    ratios = list(by_batch.values())
    assert ratios[0] > 1.3  # bandwidth-bound: fewer weight bytes pay
    assert all(
        a >= b for a, b in zip(ratios, ratios[1:], strict=False)
    )  # ... never more as the step fills
    assert abs(by_batch[16] - 1.0) < 0.05  # the studies' fact: about zero by 16 streams
    # ... because both steps are compute-bound there: more compute would make them faster, and it is
    # the device's small-batch GEMM rate that does it (without that limit the advantage holds at 16)
    hw = spec.hardware
    faster = hw.model_copy(
        update={"achieved": hw.achieved.model_copy(update={"small_batch_tflops": 12.0})}
    )
    assert CostModel.build(faster, spec.model, q, "auto").pass_seconds(
        step(16)
    ) < nvfp4.pass_seconds(step(16))
    unlimited = hw.model_copy(
        update={"achieved": hw.achieved.model_copy(update={"small_batch_tflops": None})}
    )
    fp8_u, nvfp4_u = (
        CostModel.build(unlimited, spec.model, x, "auto") for x in (spec.quantization, q)
    )
    assert advantage(fp8_u, nvfp4_u, 16) > 1.3


def test_small_batch_kernels_never_make_more_tokens_cheaper() -> None:
    """The small-batch GEMM limit raises the cost of a few tokens, never lowers a larger pass below a smaller one."""
    _, fp8 = spark._spark()
    times = [fp8.matmul_seconds(m, 1) for m in (1, 2, 8, 16, 17, 64, 256, 1024, 4096)]
    assert all(a <= b for a, b in zip(times, times[1:], strict=False))
    # prefill-sized passes run at the data type's own rate
    per_token = fp8._matmul_terms[2]
    assert fp8.matmul_seconds(8192, 1) == pytest.approx(
        8192 * per_token + fp8._matmul_terms[3], rel=1e-3
    )


def test_the_studies_spark_figures_are_reproduced() -> None:
    assert 1 / spark.spark_pass_seconds() == pytest.approx(spark.SPARK_BASE_PASSES_PER_S, rel=0.01)
    for drafter, (k, per_token) in spark.DRAFT_COST_PER_TOKEN.items():
        assert spark.draft_cost_per_token(drafter, k) == pytest.approx(per_token, rel=0.02)


def test_equal_micro_batches_keep_every_token_and_never_run_faster_than_filled_ones() -> None:
    from specexp.sim.ubatches import equal_ubatches, mixed_ubatches

    spec = spec_of(*H200_8B, "runtime.engine=llamacpp")
    runtime = SimRuntime(spec, Path("."))
    runtime.start()
    target = runtime.engine.passes.prefill_target
    decode = [Slice(tokens=1, context=600, logits=1)] * 3
    prompts = [Slice(tokens=n, context=0, logits=1) for n in (519, 519, 519, 491)]
    for verify in ([], decode):
        mixed, equal = mixed_ubatches(verify, prompts, 512), equal_ubatches(verify, prompts, 512)
        for passes in (mixed, equal):
            assert sum(x.tokens for group in passes for x in group) == len(verify) + 2048
            assert all(sum(x.tokens for x in group) <= 512 for group in passes)
        # every prompt's logits come out once, at its last token
        assert sum(x.logits for group in equal for x in group) == len(verify) + 4
        for group in equal:  # a sequence in an equal micro-batch brings as many tokens as any other
            sizes = {x.tokens for x in group if x not in verify}
            assert len(sizes) <= 1
        assert len(equal) >= len(mixed)
        seconds = [sum(target.pass_seconds(g) for g in passes if g) for passes in (mixed, equal)]
        assert seconds[1] >= seconds[0]


def test_a_serial_request_cost_queues_requests_that_arrive_together(tmp_path: Path) -> None:
    common = [
        *H200_8B,
        "runtime.engine=llamacpp",
        "workload=concurrency",
        "workload.concurrency=[4]",
        "workload.output_tokens=4",
        "workload.prompt_tokens=64",
        "workload.warmup=0",
        "workload.repeats=1",
    ]
    spec = spec_of(*common)
    last_first_token = {}
    for serial in (0.0, 100.0):
        runtime = with_profile(spec, tmp_path, request_serial_ms=serial)
        (window,) = drive(runtime, spec.workload, marker="t")
        last_first_token[serial] = max(t.events[0].t - t.sent_at for t in window.traces)
    assert last_first_token[0.0] < 0.4  # four 64-token prompts are quick...
    assert (
        last_first_token[100.0] >= 4 * 0.1
    )  # ...but the fourth waits for three launches and its own
