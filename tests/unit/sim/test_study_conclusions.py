"""The published studies' conclusions come out of the simulator (docs/studies.md, issue 14): the
rankings, not the figures, on the Spark with Qwen3.8-27B and its calibrated drafters."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.measure.metrics import window_metrics
from specexp.run.compose import build_spec
from specexp.runtimes.sim.driver import SimRuntime
from specexp.workloads.driver import drive

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


def test_the_spark_prefills_faster_than_the_a6000_on_short_prompts_and_slower_on_long_ones(
    tmp_path: Path,
) -> None:
    def prefill(hardware: str) -> list[float]:
        spec = build_spec(
            [
                f"hardware={hardware}",
                "model=qwen3.8-27b",
                "quantization=fp8",
                "drafter=none",
                "workload=prefill_sweep",
                "workload.prompt_lengths=[1024,32768]",
                "workload.repeats=1",
                "runtime.max_model_len=65536",
            ]
        )
        runtime = SimRuntime(spec, tmp_path)
        runtime.start()
        return [
            float(window_metrics(w.traces, w.delta, prefill_only=True)["prefill_tps"])
            for w in drive(runtime, spec.workload, marker="t")
        ]

    spark, a6000 = prefill("dgx_spark"), prefill("rtx_a6000")
    assert spark[0] > a6000[0] and spark[1] < a6000[1]
