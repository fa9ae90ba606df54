"""Tensor parallelism (`runtime.tensor_parallel`): the simulator splits each pass's weights, KV and
compute over the GPUs and prices every layer's all-reduces on the hardware's interconnect (NVLink on
an H200 node, PCIe between two A6000 cards); a drafter head is replicated, not split; the engines
get their own flag; and where it cannot be, it is refused at plan time in one line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.record.schema import Measurement
from specexp.run.compose import build_spec
from specexp.run.plan import make_cell
from specexp.runtimes.base import runtime_for
from specexp.spec.errors import SpecError
from tests.unit.sim.simulated import simulate


def single_stream(tp: int, *overrides: str) -> tuple[Measurement, int]:
    """One stream's measurement on `tp` GPUs, and the KV capacity in tokens."""
    (m,), info = simulate(
        [
            "workload.repeats=1",
            "workload.output_tokens=128",
            f"runtime.tensor_parallel={tp}",
            f"hardware.gpu_count={tp}",
            *overrides,
        ]
    )
    assert m.conditions.tensor_parallel == tp and m.conditions.gpu_count == tp
    return m, int(info.kv_cache_tokens or 0)


def share(m: Measurement, cost: str) -> float:
    costs = (m.step_costs or {})["decode"]
    return costs[cost] / sum(costs.values())


H200_32B = ("hardware=h200", "model=qwen3-32b", "quantization=bf16", "drafter=none")


def test_two_gpus_decode_faster_but_not_twice_as_fast() -> None:
    (one, kv1), (two, kv2), (four, _) = (single_stream(tp, *H200_32B) for tp in (1, 2, 4))
    rate = [float(m.metrics.decode_tps or 0) for m in (one, two, four)]
    # each GPU reads half the weights; the all-reduces and the per-layer overheads are not halved
    assert rate[0] < rate[1] < 2 * rate[0] and rate[1] < rate[2] < 2 * rate[1]
    assert share(one, "all_reduce") == 0 < share(two, "all_reduce") < share(four, "all_reduce")
    # each GPU holds half the weights and half of every token's KV: more than twice the tokens fit
    assert kv2 > 2 * kv1


def test_pcie_between_two_cards_costs_more_than_nvlink() -> None:
    model = ("model=qwen3-8b", "quantization=bf16", "drafter=none")
    pcie, _ = single_stream(2, "hardware=rtx_a6000", *model)
    nvlink, _ = single_stream(2, "hardware=h200", *model)

    def seconds(m: Measurement) -> float:  # the same tokens decoded: all-reduce time, whole
        return (m.step_costs or {})["decode"]["all_reduce"]

    assert seconds(pcie) > 2 * seconds(nvlink) > 0


def test_an_mtp_head_is_replicated_so_it_takes_a_larger_share_split() -> None:
    mtp = ("hardware=h200", "model=qwen3.8-27b", "quantization=bf16", "drafter=mtp", "k=3")
    one, _ = single_stream(1, *mtp)
    two, _ = single_stream(2, *mtp)
    assert share(two, "drafter") > share(one, "drafter")
    assert float(two.metrics.decode_tps or 0) > float(one.metrics.decode_tps or 0)


def _refused(*overrides: str) -> str:
    with pytest.raises(SpecError) as caught:
        build_spec(list(overrides))
    line = str(caught.value)
    assert "\n" not in line and "runtime.tensor_parallel" in line
    return line


def test_where_a_model_cannot_be_split_it_is_refused_at_plan_time() -> None:
    assert "runtime=llamacpp does not split a model" in _refused(
        "runtime=llamacpp",
        "model=tiny",
        "quantization=f32",
        "hardware=cpu",
        "runtime.tensor_parallel=2",
    )
    assert "hardware.gpu_count 1" in _refused("hardware=h200", "runtime.tensor_parallel=2")
    assert "names no interconnect" in _refused(
        "hardware=dgx_spark", "hardware.gpu_count=2", "runtime.tensor_parallel=2"
    )


def test_run_ids_of_one_gpu_jobs_ignore_the_interconnect(make_spec: Callable[..., Any]) -> None:
    def run_id(*overrides: str) -> str:
        return make_cell(make_spec("hardware=h200", *overrides)).run_id

    assert run_id() == run_id("hardware.interconnect=null")
    split = ("hardware.gpu_count=2", "runtime.tensor_parallel=2")
    assert run_id(*split) != run_id(*split, "hardware.interconnect.latency_us=30")


@pytest.mark.parametrize(
    ("engine", "flag"), [("vllm", "--tensor-parallel-size"), ("sglang", "--tp")]
)
def test_the_engines_are_started_split(
    engine: str,
    flag: str,
    make_spec: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    spec = make_spec(
        f"runtime={engine}",
        "hardware=h200",
        "hardware.gpu_count=2",
        "runtime.tensor_parallel=2",
        "model=qwen3-8b",
        "quantization=bf16",
        "runtime.model_path=/models/qwen3-8b",
    )
    argv = runtime_for(engine)(spec, tmp_path).build_argv(8000)
    assert argv[argv.index(flag) + 1] == "2"
    one = make_spec(
        f"runtime={engine}",
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "runtime.model_path=/models/qwen3-8b",
    )
    assert flag not in runtime_for(engine)(one, tmp_path).build_argv(8000)
