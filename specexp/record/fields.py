"""Every condition and every metric of docs/vocabulary.md as a typed field of the record.

Written by `scripts/record-fields` from specexp/spec/vocabulary.py (specexp.record.generate): do not
edit by hand; a test fails when it and the vocabulary differ."""

from __future__ import annotations

from specexp.record.named import Named


class Conditions(Named):
    """Every condition of the vocabulary, each present (null when unknown, never omitted;
    records written before a condition was added read it as null)."""

    hardware: str | None
    gpu_count: int | None
    gpu_shared: bool | None
    gpu_memory_utilization: float | None
    tensor_parallel: int | None = None
    usd_per_gpu_hour: float | None = None
    usd_per_kwh: float | None = None
    model: str | None
    quantization: str | None
    weights: str | None = None
    kv_cache_dtype: str | None
    max_model_len: int | None
    runtime: str | None
    runtime_version: str | None
    drafter: str | None
    k: int | None
    drafter_config: str | None
    draft_model: str | None
    workload: str | None
    prompt_tokens: int | None
    output_tokens: int | None
    ignore_eos: bool | None
    concurrency: int | None
    request_rate: float | None = None
    cache: str | None
    turn: int | None = None
    send: int | None = None
    category: str | None = None
    task: str | None = None
    eval_items: int | None = None
    prompt_text: str | None = None
    prefix_caching: bool | None
    thinking: bool | None
    temperature: float | None
    top_p: float | None = None
    repeats: int | None
    server_starts: int | None = None
    source: str | None


class Metrics(Named):
    """Every metric of the vocabulary; null where a run has no value for it."""

    decode_tps: float | None = None
    e2e_tps: float | None = None
    aggregate_tps: float | None = None
    per_stream_tps: float | None = None
    ttft_s: float | None = None
    prefill_tps: float | None = None
    tpot_s: float | None = None
    itl_s: float | None = None
    tokens_per_chunk: int | float | None = None
    acceptance_rate: float | None = None
    acceptance_by_position: list[float] | None = None
    tokens_per_pass: int | float | None = None
    cached_prompt_tokens: int | float | None = None
    kv_cache_tokens: int | float | None = None
    output_identical: bool | None = None
    task_score: float | None = None
    reasoning_tokens: int | float | None = None
    time_to_answer_s: float | None = None
    reasoning_tps: float | None = None
    answer_tps: float | None = None
    mean_power_w: float | None = None
    energy_j_per_token: float | None = None
    usd_per_mtok: float | None = None
    usd_per_mtok_energy: float | None = None
    achieved_rate_rps: float | None = None
    scheduled_rate_rps: float | None = None
    slo_attainment: float | None = None
    goodput_rps: float | None = None
    ttft_queue_s: float | None = None
    ttft_engine_s: float | None = None
    ttft_frontend_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p90_s: float | None = None
    ttft_p99_s: float | None = None
    ttft_mean_s: float | None = None
    tpot_p50_s: float | None = None
    tpot_p90_s: float | None = None
    tpot_p99_s: float | None = None
    tpot_mean_s: float | None = None
    chunk_gap_p50_s: float | None = None
    chunk_gap_p90_s: float | None = None
    chunk_gap_p99_s: float | None = None
    chunk_gap_mean_s: float | None = None
    e2e_p50_s: float | None = None
    e2e_p90_s: float | None = None
    e2e_p99_s: float | None = None
    e2e_mean_s: float | None = None
