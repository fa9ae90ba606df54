"""Physics of one forward pass: laws the simulator's cost model must obey on any device.

Nothing here copies a number from the simulator's output: every expectation is a law of
rooflines (bytes over bandwidth, FLOPs over compute), computed from the configs.
"""

from __future__ import annotations

import pytest

from specexp.roofline.costmodel import CostModel, Slice
from specexp.run.compose import load_option
from specexp.spec.experiment import ModelSpec, QuantizationSpec
from specexp.spec.hardware import HardwareSpec


def hw(name: str) -> HardwareSpec:
    return load_option(HardwareSpec, "hardware", name, "hardware")


def model(name: str) -> ModelSpec:
    return load_option(ModelSpec, "model", name, "model")


def cost(
    h: str | HardwareSpec, m: str | ModelSpec = "qwen3-8b", q: str = "bf16", kv: str = "auto"
) -> CostModel:
    hardware = hw(h) if isinstance(h, str) else h
    spec = model(m) if isinstance(m, str) else m
    return CostModel.build(
        hardware, spec, load_option(QuantizationSpec, "quantization", q, "quantization"), kv
    )


def decode(batch: int, context: int = 0, tokens: int = 1) -> list[Slice]:
    return [Slice(tokens=tokens, context=context, logits=tokens, state_writes=tokens)] * batch


def weight_bytes_by_hand(m: ModelSpec, bytes_per_weight: float) -> float:
    """Weights one dense-model pass reads, from the config: every layer's matrices and the lm_head."""
    q, kv = m.num_attention_heads * m.head_dim, m.num_key_value_heads * m.head_dim
    layer = 2 * m.hidden_size * q + 2 * m.hidden_size * kv + 3 * m.hidden_size * m.intermediate_size
    return (m.num_hidden_layers * layer + m.vocab_size * m.hidden_size) * bytes_per_weight


HARDWARE = ["h200", "h100", "dgx_spark", "rtx_a6000"]


@pytest.mark.parametrize("h", HARDWARE)
def test_a_decode_step_is_never_faster_than_its_weights_over_datasheet_bandwidth(h: str) -> None:
    spec = hw(h)
    m = model("qwen3-8b")
    floor = weight_bytes_by_hand(m, 2.0) / (spec.memory_bandwidth_gbps * 1e9)
    for batch in (1, 8, 64):
        assert cost(spec).pass_seconds(decode(batch, 1024)) > floor


@pytest.mark.parametrize("h", HARDWARE)
def test_doubling_batch_at_fixed_bytes_is_nearly_free_until_compute_bound(h: str) -> None:
    c = cost(h)

    def step(b):
        return c.pass_seconds(decode(b))

    assert step(2) / step(1) < 1.02
    assert step(8) / step(4) < 1.05
    # Far past the ridge point the GEMMs are compute-bound: twice the tokens, about twice the time.
    assert step(16384) / step(8192) > 1.9


@pytest.mark.parametrize("h", HARDWARE)
def test_fp8_weights_make_a_bandwidth_bound_step_cheaper_than_bf16(h: str) -> None:
    for batch in (1, 8):
        assert cost(h, q="fp8").pass_seconds(decode(batch, 512)) < cost(h, q="bf16").pass_seconds(
            decode(batch, 512)
        )


def test_fp4_mlps_are_cheaper_to_decode_than_fp8_on_blackwell() -> None:
    assert cost("dgx_spark", "qwen3.8-27b", "nvfp4").pass_seconds(decode(1, 1024)) < cost(
        "dgx_spark", "qwen3.8-27b", "fp8"
    ).pass_seconds(decode(1, 1024))


PREFILL = [Slice(tokens=8192, context=0, logits=1)]


def test_native_low_precision_speeds_up_compute_bound_prefill() -> None:
    # Hopper runs fp8 natively, and its achieved fp8 rate is above the bf16 one.
    assert cost("h200", q="fp8").pass_seconds(PREFILL) < cost("h200", q="bf16").pass_seconds(
        PREFILL
    )


@pytest.mark.parametrize("h", ["dgx_spark", "h200", "rtx_a6000"])
def test_a_compute_bound_prefill_follows_the_achieved_rate_not_the_weight_bytes(h: str) -> None:
    # The Spark's fp4 tensor cores exist, but the fp4 rate its serving kernels reach is calibrated
    # (below the fp8 one): whichever MLP rate is higher prefills faster, whatever the weight bytes.
    fp8, fp4 = cost(h, "qwen3.8-27b", "fp8"), cost(h, "qwen3.8-27b", "nvfp4")
    faster_fp4 = fp4.flops_rate("fp4") > fp8.flops_rate("fp8")
    assert (fp4.pass_seconds(PREFILL) < fp8.pass_seconds(PREFILL)) == faster_fp4


def test_dequantize_then_compute_costs_prefill_time_where_the_type_is_not_native() -> None:
    # Ampere has no fp8/fp4 tensor cores: the weights are dequantized to bf16 inside the GEMM,
    # which is slower than a plain bf16 GEMM on a compute-bound prefill ...
    a6000 = hw("rtx_a6000")
    assert a6000.achieved.dequant_compute < 1
    assert cost(a6000, q="fp8").pass_seconds(PREFILL) > cost(a6000, q="bf16").pass_seconds(PREFILL)
    assert cost(a6000, q="nvfp4").pass_seconds(PREFILL) > cost(a6000, q="bf16").pass_seconds(
        PREFILL
    )
    # ... while decode, bandwidth-bound, still gains from the smaller weights.
    assert cost(a6000, q="fp8").pass_seconds(decode(1, 512)) < cost(a6000, q="bf16").pass_seconds(
        decode(1, 512)
    )
    # FP4 has no Hopper path either: nvfp4 MLPs prefill slower than native fp8 ones on an H200.
    assert cost("h200", q="nvfp4").pass_seconds(PREFILL) > cost("h200", q="fp8").pass_seconds(
        PREFILL
    )


@pytest.mark.parametrize("h", HARDWARE)
def test_decode_cost_grows_with_context_by_the_kv_it_reads(h: str) -> None:
    spec = hw(h)
    c = cost(spec)
    m = model("qwen3-8b")
    kv_per_token = 2 * m.num_hidden_layers * m.num_key_value_heads * m.head_dim * 2  # K and V, bf16
    extra = c.pass_seconds(decode(1, 65_536)) - c.pass_seconds(decode(1, 1_024))
    # At least the extra KV over the datasheet bandwidth; a bandwidth-bound read, so not far more.
    at_datasheet = 64_512 * kv_per_token / (spec.memory_bandwidth_gbps * 1e9)
    assert at_datasheet < extra < 2 * at_datasheet


def test_verify_compute_grows_with_batch_times_k_plus_1_so_deep_drafts_lose_under_load() -> None:
    c = cost("h200")

    def ratio(b, k):
        return c.pass_seconds(decode(b, 1024, k + 1)) / c.pass_seconds(decode(b, 1024))

    # Alone, verifying 16 tokens costs little more than decoding one; at batch 64 it costs several times as much.
    assert ratio(1, 15) < 1.5
    assert ratio(64, 15) > 3
    assert ratio(64, 15) > ratio(16, 15) > ratio(1, 15)
    assert ratio(64, 3) < ratio(64, 15)


def test_hybrid_layers_carry_a_recurrent_state_whose_dtype_sets_its_bytes() -> None:
    m = model("qwen3.8-27b")
    assert m.linear_state_dtype == "float32"  # docs/studies.md: float32 by default
    fp32 = cost("dgx_spark", m, "fp8")
    bf16 = cost("dgx_spark", m.model_copy(update={"linear_state_dtype": "bfloat16"}), "fp8")
    assert m.linear_num_value_heads and m.linear_key_head_dim and m.linear_value_head_dim
    linear_layers = m.num_hidden_layers - m.num_hidden_layers // (m.full_attention_interval or 1)
    recurrent = (
        linear_layers * m.linear_num_value_heads * m.linear_key_head_dim * m.linear_value_head_dim
    )
    assert fp32.state_bytes - bf16.state_bytes == pytest.approx(recurrent * 2)
    # Every pass reads and writes each sequence's state: a bf16 state makes decode cheaper ...
    assert bf16.pass_seconds(decode(16, 4096)) < fp32.pass_seconds(decode(16, 4096))
    saved = fp32.pass_seconds(decode(16, 4096)) - bf16.pass_seconds(decode(16, 4096))
    spark = hw("dgx_spark")
    assert saved >= 16 * 2 * recurrent * 2 / (spark.memory_bandwidth_gbps * 1e9)

    # ... and the state does not grow with context, unlike a KV cache.
    def state_cost(ctx):
        return fp32.linear_attention_seconds(decode(1, ctx))

    assert state_cost(100_000) == state_cost(1_000)


def test_a_dense_model_has_no_recurrent_state_whatever_its_dtype() -> None:
    m = model("qwen3-8b")
    assert cost("h200", m).state_bytes == 0
    bf16 = cost("h200", m.model_copy(update={"linear_state_dtype": "bfloat16"}))
    assert bf16.pass_seconds(decode(4, 1024)) == cost("h200", m).pass_seconds(decode(4, 1024))


def test_a_verify_pass_writes_a_state_copy_per_position_on_a_hybrid_model() -> None:
    c = cost("dgx_spark", "qwen3.8-27b", "fp8")
    one = [Slice(tokens=9, context=4096, logits=9, state_writes=1)] * 8
    kept = [Slice(tokens=9, context=4096, logits=9, state_writes=9)] * 8
    assert c.pass_seconds(kept) - c.pass_seconds(one) >= 8 * 8 * c.state_bytes / (
        hw("dgx_spark").memory_bandwidth_gbps * 1e9
    )


def test_the_recurrent_state_kernels_share_of_bandwidth_prices_each_sequences_state_not_its_copies() -> (
    None
):
    # on the H200 the linear-attention kernels read and write a sequence's state at a share of the
    # achieved bandwidth (fitted to vLLM's hybrid decode at c = 1-32): each sequence in a decode step
    # costs its state twice at that rate; a verify's further per-position copies stream at full rate
    h = hw("h200")
    share = h.achieved.recurrent_state
    assert share is not None and share < 1
    slow = cost(h, "qwen3.8-27b")
    fast = cost(
        h.model_copy(update={"achieved": h.achieved.model_copy(update={"recurrent_state": None})}),
        "qwen3.8-27b",
    )
    rate = h.memory_bandwidth_gbps * 1e9 * h.achieved.bandwidth
    per_sequence = 2 * slow.state_bytes / rate
    for c in (fast, slow):
        grows = c.linear_attention_split(decode(17))[0] - c.linear_attention_split(decode(1))[0]
        assert grows == pytest.approx(16 * per_sequence / (share if c is slow else 1.0))
    kept = [Slice(tokens=4, context=512, logits=4, state_writes=4)] * 8
    one = [Slice(tokens=4, context=512, logits=4, state_writes=1)] * 8
    for c in (fast, slow):
        copies = c.linear_attention_split(kept)[0] - c.linear_attention_split(one)[0]
        assert copies == pytest.approx(8 * 3 * slow.state_bytes / rate)
