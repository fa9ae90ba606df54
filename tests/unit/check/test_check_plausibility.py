"""Physical limits from the simulator's roofline at the datasheet: a figure beyond its
hardware's limit is implausible, with the limit named; the simulator's own figures never are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkhelp import make_figure, make_run

from specexp.check.api import implausible_runs
from specexp.check.plausibility import LIMITS, Limit, implausible, limit
from specexp.check.runs import runs_of
from specexp.roofline.costmodel import CostModel
from specexp.run.compose import load_option
from specexp.spec.experiment import ModelSpec, QuantizationSpec
from specexp.spec.hardware import HardwareSpec
from specexp.spec.vocabulary import METRICS


def _weights_gb(model: str, quant: str) -> float:
    cm = CostModel.build(
        load_option(HardwareSpec, "hardware", "dgx_spark", "h"),
        load_option(ModelSpec, "model", model, "m"),
        load_option(QuantizationSpec, "quantization", quant, "q"),
        "fp8",
    )
    return cm.weight_bytes / 1e9


def test_limits_are_registered_for_known_metrics() -> None:
    assert set(LIMITS) <= set(METRICS)


def test_single_stream_decode_limit_is_bandwidth_over_weight_bytes() -> None:
    f = make_figure("x", "decode_tps", 1.0, drafter="none", k=None, drop=("prompt_tokens",))
    lim = limit(f)
    assert isinstance(lim, Limit) and lim.bound == "max"
    expected = 273e9 / (_weights_gb("qwen3.8-27b", "fp8") * 1e9)
    assert lim.value == pytest.approx(
        expected, rel=0.02
    )  # + the recurrent state of the linear layers
    assert "273 GB/s" in lim.basis and "fp8" in lim.basis


def test_a_drafter_multiplies_the_limit_by_at_most_k_plus_one() -> None:
    base = limit(make_figure("x", "decode_tps", drafter="none", k=None))
    spec = limit(make_figure("x", "decode_tps", drafter="dspark", k=7))
    assert isinstance(base, Limit) and isinstance(spec, Limit)
    assert spec.value == pytest.approx(8 * base.value)


def test_a_single_stream_figure_beyond_the_roofline_is_implausible() -> None:
    f = make_figure("forum", "decode_tps", 120.0, drafter="none", k=None)
    found = implausible(f)
    assert found is not None and found.rule == "implausible" and found.severity == "error"
    assert found.figures == ("forum",) and "≤" in found.expected and "120" in found.found


def test_quantization_moves_the_limit() -> None:
    fp8 = limit(make_figure("x", "decode_tps", quantization="fp8"))
    nvfp4 = limit(make_figure("x", "decode_tps", quantization="nvfp4"))
    assert isinstance(fp8, Limit) and isinstance(nvfp4, Limit) and nvfp4.value > fp8.value


def test_an_aggregate_may_exceed_the_single_stream_limit_but_not_its_own() -> None:
    one = limit(make_figure("x", "decode_tps", drafter="none", k=None))
    agg = limit(make_figure("x", "aggregate_tps", drafter="none", k=None, concurrency=8))
    assert isinstance(one, Limit) and isinstance(agg, Limit)
    assert one.value < agg.value < 8 * one.value
    assert (
        implausible(
            make_figure("x", "aggregate_tps", 5 * one.value, drafter="none", k=None, concurrency=8)
        )
        is None
    )


def test_a_warm_cache_lowers_the_ttft_floor() -> None:
    cold = limit(make_figure("x", "ttft_s", cache="cold", prompt_tokens=10000))
    warm = limit(make_figure("x", "ttft_s", cache="warm", prompt_tokens=10000))
    assert isinstance(cold, Limit) and isinstance(warm, Limit)
    assert cold.bound == warm.bound == "min" and warm.value < cold.value
    assert (
        implausible(make_figure("x", "ttft_s", warm.value * 1.5, cache="warm", prompt_tokens=10000))
        is None
    )
    assert (
        implausible(make_figure("x", "ttft_s", warm.value * 1.5, cache="cold", prompt_tokens=10000))
        is not None
    )


@pytest.mark.parametrize(
    ("metric", "value", "over"),
    [
        ("acceptance_rate", 1.2, {}),
        ("acceptance_by_position", (0.9, 1.1), {}),
        ("tokens_per_pass", 4.5, {"k": 3}),
        ("tpot_s", 0.001, {}),
        ("prefill_tps", 1e7, {}),
    ],
)
def test_other_limits(metric: str, value: Any, over: dict[str, Any]) -> None:
    assert implausible(make_figure("x", metric, value, **over)) is not None


@pytest.mark.parametrize(
    ("drop", "reason"),
    [
        (("hardware",), "hardware unknown"),
        (("quantization",), "quantization unknown"),
        (("drafter", "k"), "drafter unknown"),
        (("k",), "k unknown"),
    ],
)
def test_no_limit_without_the_conditions_it_needs(drop: tuple[str, ...], reason: str) -> None:
    lim = limit(make_figure("x", "decode_tps", 1e9, drop=drop))
    assert lim == reason
    assert implausible(make_figure("x", "decode_tps", 1e9, drop=drop)) is None


def test_a_generic_profile_sets_no_limit() -> None:
    """`cpu` stands for any 2-core machine: its 30 GB/s is assumed, and a faster machine's figure is
    not beyond a physical limit (reports/cpu_server_starts decoded 32 tok/s of a 1 GB model)."""
    f = make_figure(
        "x", "decode_tps", 32.0, hardware="cpu", model="qwen2.5-coder-1.5b", quantization="q4_k_m"
    )
    assert limit(f) == (
        "cpu is a generic profile: its bandwidth and FLOP/s are assumed, not a datasheet's"
    )
    assert implausible(f) is None
    assert implausible(make_figure("x", "decode_tps", 1e6, hardware="h200")) is not None


def test_an_aggregate_needs_its_concurrency() -> None:
    assert limit(make_figure("x", "aggregate_tps", drop=("concurrency",))) == "concurrency unknown"


def test_no_limit_for_metrics_without_one() -> None:
    assert isinstance(limit(make_figure("x", "kv_cache_tokens", 1e12)), str)


def test_an_unknown_kv_dtype_takes_the_highest_limit() -> None:
    fp8 = limit(make_figure("x", "decode_tps", kv_cache_dtype="fp8"))
    odd = limit(make_figure("x", "decode_tps", kv_cache_dtype="int3"))
    assert isinstance(fp8, Limit) and isinstance(odd, Limit) and odd.value == fp8.value


def test_simulated_runs_are_never_implausible(
    sim_results: list[tuple[Path, dict[str, Any]]],
) -> None:
    runs = runs_of(sim_results)
    assert len(runs) > len(sim_results)  # prefill and prefix-cache sweeps have several measurements
    assert implausible_runs(runs) == []


def test_a_doctored_run_is_flagged_with_its_limit(
    sim_results: list[tuple[Path, dict[str, Any]]],
) -> None:
    run = runs_of([(p, r) for p, r in sim_results if r.conditions.drafter == "dspark"])[0]
    doctored = {**run.metrics.model_dump(), "decode_tps": run.metrics.decode_tps * 10}
    findings = implausible_runs(make_run("bad", run.conditions.model_dump(), doctored))
    assert [f.figures for f in findings if "decode_tps" in f.expected] == [("bad",)]
