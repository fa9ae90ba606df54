"""specexp.roofline.costmodel: the roofline of one forward pass.

Which term of max(bytes / bandwidth, FLOPs / compute) wins is checked by moving one roofline
at a time: a bandwidth-bound pass follows bandwidth and ignores compute, a compute-bound one
the reverse.
"""

from __future__ import annotations

import pytest

from specexp.roofline.costmodel import CostModel, Slice, model_shape
from specexp.run.compose import load_option
from specexp.spec.experiment import ModelSpec, QuantizationSpec
from specexp.spec.hardware import HardwareSpec


def hw(name: str) -> HardwareSpec:
    return load_option(HardwareSpec, "hardware", name, "hardware")


def model(name: str) -> ModelSpec:
    return load_option(ModelSpec, "model", name, "model")


def quant(name: str) -> QuantizationSpec:
    return load_option(QuantizationSpec, "quantization", name, "quantization")


def cost(
    hardware: HardwareSpec, m: str = "qwen3-8b", q: str = "bf16", kv: str = "auto"
) -> CostModel:
    return CostModel.build(hardware, model(m), quant(q), kv)


def faster_memory(h: HardwareSpec, factor: float = 2.0) -> HardwareSpec:
    return h.model_copy(update={"memory_bandwidth_gbps": h.memory_bandwidth_gbps * factor})


def faster_compute(h: HardwareSpec, factor: float = 2.0) -> HardwareSpec:
    peaks = {k: (v * factor if v else v) for k, v in h.peak_tflops.items()}
    a = h.achieved
    small = a.small_batch_tflops * factor if a.small_batch_tflops else None
    return h.model_copy(
        update={
            "peak_tflops": peaks,
            "achieved": a.model_copy(update={"small_batch_tflops": small}),
        }
    )


def overhead(h: HardwareSpec, m: str = "qwen3-8b") -> float:
    """The fixed cost of one pass: per step and per decoder layer (the same at any bandwidth or compute)."""
    return cost(h, m).overhead_seconds


DECODE = [Slice(tokens=1, context=512, logits=1)]
PREFILL = [Slice(tokens=8192, context=0, logits=1)]
CASES = [
    ("h200", "qwen3-8b", "bf16"),
    ("dgx_spark", "qwen3.8-27b", "fp8"),
    ("rtx_a6000", "qwen3-8b", "bf16"),
    ("h100", "llama-3.1-8b", "fp8"),
]


@pytest.mark.parametrize(("hardware", "m", "q"), CASES)
def test_doubling_bandwidth_halves_a_decode_steps_roofline_time(
    hardware: str, m: str, q: str
) -> None:
    h = hw(hardware)
    slow = cost(h, m, q).pass_seconds(DECODE) - overhead(h, m)
    fast = cost(faster_memory(h), m, q).pass_seconds(DECODE) - overhead(h, m)
    assert fast == pytest.approx(slow / 2, rel=1e-9)


@pytest.mark.parametrize(("hardware", "m", "q"), CASES)
def test_decode_at_batch_1_is_bandwidth_bound(hardware: str, m: str, q: str) -> None:
    h = hw(hardware)
    base = cost(h, m, q).pass_seconds(DECODE)
    assert cost(faster_compute(h), m, q).pass_seconds(DECODE) == pytest.approx(base, rel=1e-12)
    assert cost(faster_memory(h), m, q).pass_seconds(DECODE) < base


@pytest.mark.parametrize(("hardware", "m", "q"), CASES)
def test_prefill_is_compute_bound(hardware: str, m: str, q: str) -> None:
    h = hw(hardware)
    base = cost(h, m, q).pass_seconds(PREFILL)
    assert cost(faster_memory(h), m, q).pass_seconds(PREFILL) == pytest.approx(base, rel=1e-12)
    doubled = cost(faster_compute(h), m, q).pass_seconds(PREFILL)
    assert doubled - overhead(h, m) == pytest.approx((base - overhead(h, m)) / 2, rel=1e-9)


def test_bandwidth_bound_decode_time_is_bytes_over_achieved_bandwidth() -> None:
    h = hw("h200")
    c = cost(h)
    moved = c.weight_bytes + (512 + 1) * c.kv_bytes_per_token
    expected = moved / (h.memory_bandwidth_gbps * 1e9 * h.achieved.bandwidth) + overhead(h)
    assert c.pass_seconds(DECODE) == pytest.approx(expected, rel=1e-9)


def test_fp8_weights_make_a_bandwidth_bound_step_cheaper_than_bf16() -> None:
    h = hw("h200")
    bf16, fp8 = cost(h, q="bf16"), cost(h, q="fp8")
    assert fp8.weight_bytes < bf16.weight_bytes
    assert fp8.pass_seconds(DECODE) < bf16.pass_seconds(DECODE)
    assert cost(hw("dgx_spark"), q="fp8").pass_seconds(DECODE) < cost(
        hw("dgx_spark"), q="bf16"
    ).pass_seconds(DECODE)


def test_native_fp8_compute_makes_prefill_faster_on_hopper_but_not_on_ampere() -> None:
    hopper, ampere = hw("h200"), hw("rtx_a6000")
    assert cost(hopper, q="fp8").pass_seconds(PREFILL) < cost(hopper, q="bf16").pass_seconds(
        PREFILL
    )
    # No FP8 tensor cores: FP8 weights are dequantized and multiplied in bf16, never faster.
    assert cost(ampere, q="fp8").pass_seconds(PREFILL) >= cost(ampere, q="bf16").pass_seconds(
        PREFILL
    )


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_verify_pass_cost_grows_with_k(batch: int) -> None:
    c = cost(hw("h200"))
    times = [
        c.pass_seconds([Slice(tokens=k + 1, context=1024, logits=k + 1)] * batch)
        for k in (0, 1, 3, 7, 15)
    ]
    assert all(a < b for a, b in zip(times, times[1:], strict=False))


def test_a_large_verify_batch_is_bound_by_compute() -> None:
    h = hw("h200")
    big = [Slice(tokens=16, context=1024, logits=16)] * 256
    base = cost(h).pass_seconds(big) - overhead(h)
    # Most of it is GEMM time: doubling compute saves far more than doubling bandwidth.
    by_compute = base - (cost(faster_compute(h)).pass_seconds(big) - overhead(h))
    by_memory = base - (cost(faster_memory(h)).pass_seconds(big) - overhead(h))
    assert by_compute > 0.3 * base
    assert by_compute > 2 * by_memory


def test_every_pass_pays_the_fixed_overhead() -> None:
    h = hw("h200")
    assert cost(h).pass_seconds(DECODE) > overhead(h) > 0
    assert hw("h200").layer_overhead_us > 0 or hw("h200").step_overhead_ms > 0
    assert cost(h).pass_seconds([]) == 0.0


def test_longer_context_costs_more_to_decode() -> None:
    c = cost(hw("h200"))
    short = c.pass_seconds([Slice(tokens=1, context=1_000, logits=1)])
    long = c.pass_seconds([Slice(tokens=1, context=30_000, logits=1)])
    assert long > short


def test_fp8_kv_cache_halves_kv_bytes_per_token() -> None:
    h = hw("h200")
    assert cost(h, kv="fp8").kv_bytes_per_token == pytest.approx(
        cost(h, kv="auto").kv_bytes_per_token / 2
    )


@pytest.mark.parametrize(
    ("name", "params_b"), [("qwen3-8b", 8.19), ("qwen3-32b", 32.8), ("llama-3.1-8b", 8.03)]
)
def test_parameter_count_matches_the_published_size(name: str, params_b: float) -> None:
    m = model(name)
    s = model_shape(m)
    with_input_embeddings = s.total_params + (0 if m.tie_word_embeddings else s.lm_head_params)
    assert with_input_embeddings / 1e9 == pytest.approx(params_b, rel=0.02)


def test_hybrid_model_caches_kv_for_full_attention_layers_only() -> None:
    m = model("qwen3.8-27b")
    s = model_shape(m)
    assert m.full_attention_interval
    assert s.full_attention_layers == m.num_hidden_layers // m.full_attention_interval
    assert s.linear_attention_layers == m.num_hidden_layers - s.full_attention_layers
    assert (
        s.kv_elements_per_token == 2 * s.full_attention_layers * m.num_key_value_heads * m.head_dim
    )
    assert s.linear_state_elements > 0


def test_a_mixture_of_experts_holds_every_expert_and_a_decode_token_reads_k_of_them() -> None:
    """Qwen3-30B-A3B: 128 experts, 8 per token. All 61 GB of bf16 weights are held; one decode
    token reads the non-expert weights and 8/128 of the experts'."""
    c = cost(hw("h200"), "qwen3-30b-a3b")
    s = c.shape
    assert c.resident_weight_bytes / 1e9 == pytest.approx(61.1, abs=0.2)
    routed = s.routed_expert_params * 2.0
    assert c.weight_bytes_read(1) == pytest.approx(c.weight_bytes - routed * (1 - 8 / 128))
    assert c.weight_bytes_read(10_000) == pytest.approx(c.weight_bytes)


def test_a_verify_pass_reads_more_experts_so_it_costs_a_mixture_more_than_a_dense_model() -> None:
    """Four tokens in one pass read about 3.6 x the routed experts one token reads: on a MoE the
    pass grows where a dense model's stays almost flat, which is why speculation gains less."""
    h = hw("h200")

    def growth(m: str) -> float:
        c = cost(h, m)
        one = c.pass_seconds([Slice(tokens=1, context=512, logits=1)])
        return c.pass_seconds([Slice(tokens=4, context=512, logits=4)]) / one

    assert growth("qwen3-30b-a3b") > growth("qwen3-8b") + 0.3
    c = cost(h, "qwen3-30b-a3b")
    assert c.shape.touched_share(4) / c.shape.touched_share(1) == pytest.approx(3.64, abs=0.01)


def test_a_mixture_computes_with_its_active_parameters() -> None:
    """Prefill is compute-bound: twice the compute halves its matmul time, and its FLOPs are
    those of the 3.3 B active parameters, not the 30.5 B held."""
    h = hw("h200")
    c = cost(h, "qwen3-30b-a3b")
    tokens = 16_384
    matmul = c.matmul_seconds(tokens, 1)
    assert cost(faster_compute(h), "qwen3-30b-a3b").matmul_seconds(tokens, 1) == pytest.approx(
        matmul / 2, rel=0.02
    )
    s = c.shape
    active = s.active_mlp_params + s.attention_params
    assert matmul == pytest.approx(2 * active * tokens / c.flops_rate("bf16"), rel=0.05)
