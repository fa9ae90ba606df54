"""What the simulator learned from llama-server on a 2-core CPU with trained weights
(benchmarks/results/cpu_pair_calibration.md): drafts that are not every step and not k long,
a draft model that also runs over the target's batch, sampling paid per token, a CPU whose
several-token passes stream the weights and then compute, and an engine profile per device."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specexp.measure.metrics import window_metrics
from specexp.roofline.costmodel import CostModel, Slice
from specexp.run.compose import build_spec, load_option
from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.drafting import AcceptanceModel, DraftCost
from specexp.sim.profile import load_profile
from specexp.spec.errors import SpecError
from specexp.spec.experiment import DrafterSpec, ExperimentSpec
from specexp.workloads.driver import drive

CPU_PAIR = (
    "runtime.engine=llamacpp",
    "hardware=cpu",
    "model=qwen2.5-coder-1.5b",
    "quantization=q4_k_m",
    "workload.output_tokens=48",
    "workload.repeats=1",
)


def drafter(name: str, **update: object) -> DrafterSpec:
    spec: DrafterSpec = load_option(DrafterSpec, "drafter", name, "drafter")
    return spec.model_copy(update=update)


def test_a_draft_rate_drafts_that_share_of_steps_and_keeps_acceptance_per_draft() -> None:
    table = [0.9, 0.7, 0.5, 0.3]
    d = drafter("ngram", acceptance={"copy": table}, draft_rate={"copy": 0.3})
    model = AcceptanceModel(d, "copy", "q4_k_m", seed=3)
    proposed = [model.propose(4) for _ in range(5_000)]
    drafts = [(n, a) for n, a in proposed if n]
    assert len(drafts) / len(proposed) == pytest.approx(0.3, abs=0.01)
    assert all(a == 0 for n, a in proposed if n == 0)
    by_position = [sum(a > i for _, a in drafts) / len(drafts) for i in range(4)]
    assert by_position == pytest.approx(table, abs=0.02)


def test_drafts_stop_short_as_draft_continue_says_and_never_below_what_is_accepted() -> None:
    table = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4]
    d = drafter("draft_model", acceptance={"code": table}, draft_continue={"code": 0.9})
    model = AcceptanceModel(d, "code", "q4_k_m", seed=5)
    proposed = [model.propose(8) for _ in range(5_000)]
    assert all(1 <= n <= 8 and a <= n for n, a in proposed)
    mean = float(np.mean([n for n, _ in proposed]))
    geometric = sum(0.9**i for i in range(8))
    assert mean >= geometric - 0.05  # the accepted run can only lengthen a draft
    assert mean < 8 - 0.5
    by_position = [float(np.mean([a > i for _, a in proposed])) for i in range(8)]
    assert by_position == pytest.approx(table, abs=0.02)


def test_a_lookup_that_never_drafts_decodes_one_token_a_step_at_no_drafter_speed(
    tmp_path: Path,
) -> None:
    """llama.cpp's n-gram finds no match in fresh chat text: no verify of k + 1 tokens is paid."""
    speeds = {}
    for extra in (
        ("drafter=none",),
        ("drafter=ngram", "k=8", "++drafter.draft_rate={chat:0.0}"),
        ("drafter=ngram", "k=8"),
    ):
        spec = build_spec(["workload=short_chat", *CPU_PAIR, *extra])
        speeds[extra[-1]] = decode_tps(spec, tmp_path)
    never, always = speeds["++drafter.draft_rate={chat:0.0}"], speeds["k=8"]
    assert never == pytest.approx(speeds["drafter=none"], rel=0.02)
    assert always < 0.7 * never  # the chat table's drafts, mostly rejected, cost a verify each


def decode_tps(spec: ExperimentSpec, tmp_path: Path) -> float:
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    window = next(iter(drive(runtime, spec.workload, marker="t")))
    return float(window_metrics(window.traces, window.delta, prefill_only=False)["decode_tps"])


def test_a_cpu_pass_of_several_tokens_pays_the_weights_and_the_compute_in_turn() -> None:
    spec = build_spec([*CPU_PAIR, "drafter=none"])
    model = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    one, two, nine = (model.matmul_seconds(n, n) for n in (1, 2, 9))
    per_token = (nine - two) / 7
    assert per_token > 0
    assert two - one == pytest.approx(2 * per_token)  # one token: the stream hides its compute
    gpu = build_spec(["hardware=h200", "model=qwen3-8b", "quantization=bf16", "drafter=none"])
    h200 = CostModel.build(gpu.hardware, gpu.model, gpu.quantization, "auto")
    assert h200.matmul_seconds(2, 2) == pytest.approx(h200.matmul_seconds(1, 1), rel=0.05)


def test_a_draft_model_that_catches_up_pays_a_pass_over_the_verify_batch() -> None:
    spec = build_spec([*CPU_PAIR, "drafter=draft_model", "k=4"])
    target = CostModel.build(spec.hardware, spec.model, spec.quantization, "auto")
    draft = CostModel.build(spec.hardware, spec.draft_model, spec.quantization, "auto")
    verify = [Slice(5, 100, 5), Slice(3, 80, 3)]  # one full draft, one cut short at 2
    plain = DraftCost(spec.drafter, target, draft, spec.quantization)
    catching_up = DraftCost(spec.drafter, target, draft, spec.quantization, catch_up=True)
    gap = catching_up.seconds(4, verify) - plain.seconds(4, verify)
    assert gap == pytest.approx(draft.pass_seconds([Slice(5, 100, 1), Slice(3, 80, 0)]))
    both = draft.pass_seconds([Slice(1, 100, 1), Slice(1, 80, 1)])
    alone = draft.pass_seconds([Slice(1, 100, 1)])
    # positions 1-3 for both, then the short draft's third pass (the token it dropped) is shared
    # with the full one's, and the full draft's fourth runs alone
    assert plain.seconds(4, verify) == pytest.approx(3 * both + alone)


def test_a_profile_takes_its_figures_for_the_device_and_only_there() -> None:
    cpu, h200 = load_profile("llamacpp", "cpu"), load_profile("llamacpp", "h200")
    assert cpu.graph_capture_ms == 0 and cpu.ungraphed_pass_ms == {}
    assert h200.graph_capture_ms > 0 and h200 == load_profile("llamacpp")
    assert cpu.sampling == h200.sampling == "per_token"


def test_a_bad_figure_for_a_device_is_refused_when_the_profile_loads() -> None:
    profile = load_profile("llamacpp")
    bad = profile.model_copy(update={"devices": {"cpu": {"seq_overhead_ms": -1}}})
    from specexp.sim.profile import for_device

    with pytest.raises(ValueError, match="seq_overhead_ms"):
        for_device(bad, "cpu")
    with pytest.raises(SpecError):
        load_profile("no-such-engine", "cpu")


def test_a_draft_rate_outside_zero_to_one_is_refused_naming_the_key() -> None:
    with pytest.raises(SpecError, match="draft_rate"):
        build_spec([*CPU_PAIR, "drafter=ngram", "k=4", "++drafter.draft_rate={copy:1.5}"])
    with pytest.raises(SpecError, match="draft_continue"):
        build_spec([*CPU_PAIR, "drafter=ngram", "k=4", "++drafter.draft_continue={copy:-0.1}"])
