"""specexp.sim.drafting: the acceptance model reproduces its calibration inputs
(docs/studies.md, "Facts to use as inputs"), and drafting cost follows the drafter's structure."""

from __future__ import annotations

import numpy as np
import pytest

from specexp.roofline.costmodel import CostModel, Slice
from specexp.run.compose import load_option
from specexp.sim.drafting import AcceptanceModel, DraftCost
from specexp.spec.experiment import DrafterSpec, ModelSpec, QuantizationSpec
from specexp.spec.hardware import HardwareSpec

DRAWS = 40_000
SAMPLING = 0.01
"""Tolerance of a seeded long draw: the standard error at DRAWS draws is below 0.003."""
PUBLISHED = 0.001
"""Published figures are rounded to 0.1 %."""


def drafter(name: str) -> DrafterSpec:
    return load_option(DrafterSpec, "drafter", name, "drafter")


def acceptance(
    name: str, workload: str = "fresh", quantization: str = "fp8", seed: int = 0
) -> AcceptanceModel:
    return AcceptanceModel(drafter(name), workload, quantization, seed)


def long_draw(model: AcceptanceModel, k: int, n: int = DRAWS) -> np.ndarray:
    return np.array([model.draw(k) for _ in range(n)])


# docs/studies.md: "Overall acceptance on fresh_generation across a sweep of MTP k = 3, 8, 15 and DSpark
# k = 7, 14 (same order): 79.0 %, 50.3 %, 28.9 %, 31.7 %, 15.8 %." (Qwen3.8-27B FP8.)
CALIBRATION = [
    ("mtp", 3, 0.790),
    ("mtp", 8, 0.503),
    ("mtp", 15, 0.289),
    ("dspark", 7, 0.317),
    ("dspark", 14, 0.158),
]


@pytest.mark.parametrize(("name", "k", "published"), CALIBRATION)
def test_expected_acceptance_reproduces_the_published_sweep(
    name: str, k: int, published: float
) -> None:
    expected = acceptance(name).expected(k)
    assert len(expected) == k
    assert float(np.mean(expected)) == pytest.approx(published, abs=PUBLISHED)


@pytest.mark.parametrize(("name", "k", "published"), CALIBRATION)
def test_long_seeded_draw_reproduces_the_published_sweep(
    name: str, k: int, published: float
) -> None:
    accepted = long_draw(acceptance(name, seed=7), k)
    assert accepted.sum() / (DRAWS * k) == pytest.approx(published, abs=SAMPLING)


@pytest.mark.parametrize(("name", "k"), [("mtp", 3), ("mtp", 8), ("dspark", 7), ("eagle3", 5)])
def test_long_draw_matches_the_per_position_model(name: str, k: int) -> None:
    model = acceptance(name, seed=3)
    accepted = long_draw(model, k)
    by_position = [(accepted > i).mean() for i in range(k)]
    assert by_position == pytest.approx(model.expected(k), abs=SAMPLING)


def test_nvfp4_mtp_accepts_about_53_percent() -> None:
    # docs/studies.md: "MTP on the NVFP4 checkpoint accepts about 53 % of drafted tokens" (k = 3).
    assert float(np.mean(acceptance("mtp", quantization="nvfp4").expected(3))) == pytest.approx(
        0.53, abs=0.005
    )


def test_dflash_for_muse_accepts_about_25_percent() -> None:
    # docs/studies.md: "A DFlash drafter for Muse reached only 25 % acceptance" (blocks of 16: k = 15).
    assert float(np.mean(acceptance("dflash").expected(15))) == pytest.approx(0.25, abs=PUBLISHED)


def test_a_position_is_accepted_only_after_every_earlier_one() -> None:
    for name in ("mtp", "dspark", "ngram", "eagle3", "dflash", "draft_model"):
        expected = acceptance(name).expected(12)
        assert all(0 <= b <= a <= 1 for a, b in zip(expected, expected[1:], strict=False)), name


def test_block_drafter_accepts_nothing_beyond_its_trained_block() -> None:
    model = acceptance("dspark")
    assert model.expected(14)[7:] == [0.0] * 7
    assert long_draw(model, 14, 5_000).max() <= 7


def test_draws_stay_between_zero_and_k() -> None:
    accepted = long_draw(acceptance("mtp", workload="copy"), 4, 5_000)
    assert accepted.min() >= 0 and accepted.max() <= 4
    assert accepted.max() == 4  # a copying workload accepts whole drafts now and then


def test_same_seed_same_draws_different_seed_different_draws() -> None:
    a = long_draw(acceptance("mtp", seed=11), 8, 500)
    b = long_draw(acceptance("mtp", seed=11), 8, 500)
    c = long_draw(acceptance("mtp", seed=12), 8, 500)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_unknown_workload_class_falls_back_to_fresh() -> None:
    assert acceptance("mtp", workload="none").expected(3) == acceptance("mtp").expected(3)


# --- drafting cost ----------------------------------------------------------------------


def _draft_cost(
    name: str, q: str = "fp8", hw: str = "dgx_spark", m: str = "qwen3.8-27b"
) -> DraftCost:
    h = load_option(HardwareSpec, "hardware", hw, "hardware")
    quant = load_option(QuantizationSpec, "quantization", q, "quantization")
    target = CostModel.build(h, load_option(ModelSpec, "model", m, "model"), quant, "auto")
    return DraftCost(drafter(name), target, None, quant)


ONE = [Slice(tokens=4, context=512, logits=4)]


def test_sequential_head_cost_is_linear_in_k_besides_a_fixed_cost_per_round() -> None:
    mtp = _draft_cost("mtp")
    assert mtp.draft_seconds(6, ONE) == pytest.approx(2 * mtp.draft_seconds(3, ONE), rel=1e-9)
    fixed = mtp.drafter.cost.round_overhead_passes * mtp.target.unit_pass_seconds
    assert fixed > 0
    for k in (1, 3, 8):
        assert mtp.seconds(k, ONE) == pytest.approx(mtp.draft_seconds(k, ONE) + fixed, rel=1e-9)
    assert mtp.seconds(0, ONE) == 0.0


def test_a_fixed_cost_per_round_favours_deeper_drafts() -> None:
    """With acceptance fixed, the cost per drafted token falls with k only by the round's fixed part."""
    mtp = _draft_cost("mtp")
    bare = DraftCost(
        mtp.drafter.model_copy(
            update={"cost": mtp.drafter.cost.model_copy(update={"round_overhead_passes": 0.0})}
        ),
        mtp.target,
        None,
        mtp.quant,
    )
    per_token = {k: mtp.seconds(k, ONE) / k for k in (3, 8)}
    bare_per_token = {k: bare.seconds(k, ONE) / k for k in (3, 8)}
    assert per_token[8] < per_token[3]
    assert bare_per_token[8] == pytest.approx(bare_per_token[3], rel=1e-9)


def test_mtp_pays_a_full_lm_head_read_per_draft_token() -> None:
    mtp = _draft_cost("mtp")
    t = mtp.target
    lm_head_read = t.shape.lm_head_params * t.quant.bytes_per_weight["embeddings"] / t.bandwidth
    for k in (1, 3, 8):
        assert mtp.seconds(k, ONE) >= k * lm_head_read


def test_block_drafter_drafts_the_whole_block_in_one_pass() -> None:
    dspark = _draft_cost("dspark")
    # Bandwidth-bound at batch 1: a block of 14 costs about what a block of 7 does, far below twice.
    assert dspark.seconds(14, ONE) < 1.2 * dspark.seconds(7, ONE)
    mtp = _draft_cost("mtp")
    assert dspark.seconds(15, ONE) < mtp.seconds(15, ONE)


def test_ngram_drafting_costs_only_its_lookup() -> None:
    ngram = _draft_cost("ngram")
    assert ngram.seconds(4, ONE) == pytest.approx(drafter("ngram").cost.overhead_ms / 1e3)
    assert ngram.seconds(4, ONE) < _draft_cost("mtp").seconds(1, ONE)


@pytest.mark.parametrize("name", ["mtp", "eagle3"])
def test_sequential_drafting_cost_grows_with_k(name: str) -> None:
    cost = _draft_cost(name)
    times = [cost.seconds(k, ONE * 8) for k in (1, 2, 4, 8)]
    assert all(a < b for a, b in zip(times, times[1:], strict=False))


@pytest.mark.parametrize("name", ["dspark", "dflash"])
def test_block_drafting_cost_never_falls_with_k_and_grows_once_compute_bound(name: str) -> None:
    cost = _draft_cost(name)
    for batch in (1, 8, 64):
        times = [cost.seconds(k, ONE * batch) for k in (1, 2, 4, 8, 15)]
        assert all(a <= b for a, b in zip(times, times[1:], strict=False)), batch
    assert cost.seconds(15, ONE * 64) > cost.seconds(1, ONE * 64)


def test_a_weaker_quantization_loses_acceptance_at_every_position() -> None:
    fp8, nvfp4 = acceptance("mtp").expected(3), acceptance("mtp", quantization="nvfp4").expected(3)

    def conditional(p):
        return [p[0]] + [b / a for a, b in zip(p, p[1:])]

    assert all(n < f for n, f in zip(conditional(nvfp4), conditional(fp8)))


def test_a_drafter_runs_over_the_prompt_in_proportion_to_its_layers_and_a_lookup_not_at_all() -> (
    None
):
    # A head or block drafter keeps its own KV of the context, so it runs over every prompt token
    # a step prefills: at least its layers' share of the target's pass (more in BF16 weights, with
    # a fusion projection), never a whole one, and more for a longer context; a lookup reads nothing.
    prompt = [Slice(tokens=8192, context=0, logits=0)]
    later = [Slice(tokens=8192, context=57_344, logits=0)]  # the same chunk deep in a 64k prompt
    mtp, dspark = _draft_cost("mtp"), _draft_cost("dspark")
    target = mtp.target.pass_seconds(prompt)
    layers = mtp.target.shape.full_attention_layers + mtp.target.shape.linear_attention_layers
    for cost in (mtp, dspark):
        share = cost.drafter.cost.target_layers / layers
        assert 0.5 * share * target < cost.prefill_seconds(prompt) < 0.5 * target
        assert cost.prefill_seconds(later) > cost.prefill_seconds(prompt)
    assert dspark.prefill_seconds(prompt) > mtp.prefill_seconds(prompt)  # two layers against one
    assert _draft_cost("ngram").prefill_seconds(prompt) == 0.0
    assert mtp.prefill_seconds([]) == 0.0


def test_a_drafters_costs_are_its_devices_own_where_it_has_them() -> None:
    """conf/drafter/mtp.yaml: the head's kernel efficiency fitted on the H200 (vLLM's MTP steps with
    nothing accepted), the Spark's elsewhere."""
    from specexp.run.compose import build_spec

    mtp = build_spec(["drafter=mtp", "k=3"]).drafter.cost
    assert mtp.on("h200").kernel_efficiency == 1.0
    assert mtp.on("dgx_spark").kernel_efficiency == mtp.kernel_efficiency == 0.48
    assert mtp.on("h200").round_overhead_passes == mtp.round_overhead_passes
