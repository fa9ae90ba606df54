"""The published studies' conclusions as the simulator gives them (docs/studies.md, issues 14 and 39): the
rankings, not the figures, on the Spark with Qwen3.8-27B and its calibrated drafters; where the machines'
measured rates do not give a conclusion whole, the part they give."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.measure.metrics import window_metrics
from specexp.run.compose import build_spec
from specexp.runtimes.sim.driver import SimRuntime
from specexp.workloads.driver import drive
from tests.unit.sim.simulated import simulate

SPARK = ["hardware=dgx_spark", "model=qwen3.8-27b", "quantization=fp8"]


def decode_tps(tmp_path: Path, *overrides: str) -> float:
    spec = build_spec([*SPARK, "workload.repeats=1", "workload.warmup=0", *overrides])
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    (window,) = drive(runtime, spec.workload, marker="t")
    return float(window_metrics(window.traces, window.delta, prefill_only=False)["decode_tps"])


@pytest.mark.parametrize("workload", ["fresh_generation", "edit_heavy"])
def test_dspark_k7_beats_every_mtp_depth(workload: str, tmp_path: Path) -> None:
    dspark = decode_tps(tmp_path, f"workload={workload}", "drafter=dspark", "k=7")
    mtp = {
        k: decode_tps(tmp_path, f"workload={workload}", "drafter=mtp", f"k={k}") for k in (3, 8, 15)
    }
    assert all(dspark > v for v in mtp.values()), (dspark, mtp)


def test_mtp_k8_beats_k3_on_fresh_text(tmp_path: Path) -> None:
    k3, k8 = (
        decode_tps(tmp_path, "workload=fresh_generation", "drafter=mtp", f"k={k}") for k in (3, 8)
    )
    assert k8 > k3


CROSSOVER_LENGTHS = (1024, 5000, 10000, 20000, 32768)


def ttfts(hardware: str) -> dict[int, float]:
    """The first token's time by prompt length, prefilled alone."""
    found, _ = simulate(
        [
            f"hardware={hardware}",
            "model=qwen3.8-27b",
            "quantization=fp8",
            "drafter=none",
            "workload=prefill_sweep",
            f"workload.prompt_lengths=[{','.join(map(str, CROSSOVER_LENGTHS))}]",
            "workload.repeats=1",
            "runtime.max_model_len=65536",
        ]
    )
    times = [float(m.metrics.ttft_s or 0) for m in found if m.metrics.ttft_s]
    return dict(zip(CROSSOVER_LENGTHS, times, strict=True))


def test_the_spark_loses_ground_to_the_a6000_as_prompts_grow() -> None:
    """The studies' crossover, as far as the machines' measured rates give it (docs/studies.md, "The
    Spark-A6000 prefill crossover"): the Spark's first token over the A6000's is larger at 10k tokens
    than at 1k and larger at 32k than at 10k (attention's quadratic part, at the Spark's rate), and both
    machines' first token for ~10k tokens is within 25 % of the studies' 6-9 s. The crossing itself is
    not asserted: with the Spark's stock matmul share it has no short-prompt lead to lose, and with a
    tuned one it would lose it by 10k only with attention at 30 TFLOP/s or less, below every rate
    measured or inferred on a GB10."""
    spark, a6000 = ttfts("dgx_spark"), ttfts("rtx_a6000")
    ratio = {n: spark[n] / a6000[n] for n in CROSSOVER_LENGTHS}
    assert ratio[1024] < ratio[10000] < ratio[32768], (spark, a6000)
    for ttft in (spark[10000], a6000[10000]):
        assert 6.0 * 0.75 <= ttft <= 9.0 * 1.25, (spark, a6000)


def warm_gain(drafter: str) -> float:
    """The Spark's cold over warm first token for the `prefix_cache` workload's shortest prefix (3.7k)."""
    found, _ = simulate(
        [
            *SPARK,
            f"drafter={drafter}",
            *(["k=3"] if drafter == "mtp" else []),
            "workload=prefix_cache",
            "workload.prompt_lengths=[3700]",
            "workload.repeats=1",
            "runtime.max_model_len=65536",
        ]
    )
    ttft = {
        str(m.conditions.cache): float(m.metrics.ttft_s or 0) for m in found if m.metrics.ttft_s
    }
    return ttft["cold"] / ttft["warm"]


def test_mtp_halves_the_warm_prefix_gain_on_the_spark_as_the_studies_report() -> None:
    """The studies' warm-over-cold gain on the Spark, 4x with MTP off and 2x with it on, which they put
    down to MTP's larger aligned cache blocks (1,600 tokens against 224). The simulator's blocks are those
    vLLM 0.26 reported on the H200 (784 and 800), and MTP costs its warm hit in two ways: the hit resumes
    from a state one block earlier (2,400 tokens cached against 3,136) and the MTP head passes over the
    recomputed tail. The gain without MTP over the gain with it is the studies' 2 within 30 %, and each
    is a gain; the gains themselves come out 37-42 % above the studies' (docs/studies.md, "The
    warm-prefix gain on the Spark")."""
    off, on = warm_gain("none"), warm_gain("mtp")
    assert on > 1.0 and off / on == pytest.approx(4.0 / 2.0, rel=0.30), (off, on)
