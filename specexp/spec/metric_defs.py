"""The metrics of docs/vocabulary.md section 2, each described once: its unit, direction, definition,
label, the family of conditions that can move it, the report tables it is a column of and whether
`--compare` judges it. specexp.measure.metrics computes them; specexp.spec.vocabulary names them
(`M.ttft_s`); the relevance families (specexp.check.relevance), the report's tables and `--compare`'s
figures read their lists from here, and docs/vocabulary.md's metric table is written from it
(scripts/vocabulary-tables)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    better: str
    """"higher", "lower" or "" (no direction)."""
    definition: str
    label: str
    family: str
    """Its relevance family (specexp.check.relevance.FAMILIES): the conditions that can move it."""
    shown_in: tuple[str, ...] = ()
    """The report tables it is a column of, in this order of METRICS ("decode": one stream,
    "concurrency": concurrent streams, "prefill": prefill and prefix reuse)."""
    compared: bool = False
    """A figure `--compare` judges wherever both sweeps have it."""


METRICS: dict[str, MetricDef] = {
    m.name: m
    for m in (
        MetricDef(
            "decode_tps",
            "tok/s",
            "higher",
            "(completion tokens - 1) / (last token - first token), one request; none where the client read the stream's ends in bulk (docs/records.md, `reads`)",
            "decode, mean",
            "decode",
            shown_in=("decode",),
            compared=True,
        ),
        MetricDef(
            "e2e_tps",
            "tok/s",
            "higher",
            "completion tokens / (last token - request sent), one request; includes prefill",
            "e2e, mean",
            "e2e",
            shown_in=("decode",),
            compared=True,
        ),
        MetricDef(
            "aggregate_tps",
            "tok/s",
            "higher",
            "all requests of a concurrency level: sum of completion tokens / (last token of any - first sent)",
            "aggregate",
            "aggregate",
            shown_in=("concurrency",),
            compared=True,
        ),
        MetricDef(
            "per_stream_tps",
            "tok/s",
            "higher",
            "mean over requests of e2e_tps at a concurrency level",
            "per stream",
            "aggregate",
            shown_in=("concurrency",),
            compared=True,
        ),
        MetricDef(
            "ttft_s",
            "s",
            "lower",
            "request sent -> first chunk that carries generated tokens",
            "TTFT, mean",
            "ttft",
            shown_in=("decode", "concurrency", "prefill"),
            compared=True,
        ),
        MetricDef(
            "prefill_tps",
            "tok/s",
            "higher",
            "(prompt tokens - cached prompt tokens) / ttft_s, with max_tokens = 1",
            "prefill",
            "prefill",
            shown_in=("prefill",),
            compared=True,
        ),
        MetricDef(
            "tpot_s",
            "s",
            "lower",
            "(e2e latency - ttft_s) / (completion tokens - 1); none where the client read the stream's ends in bulk (docs/records.md, `reads`)",
            "TPOT, mean",
            "decode",
        ),
        MetricDef(
            "itl_s",
            "s",
            "lower",
            "per chunk, not per token: mean gap between consecutive token-bearing chunks, one request (tpot_s is the per-token figure; itl_s / tokens_per_chunk = tpot_s); none where the client read the stream's ends in bulk",
            "ITL, mean",
            "decode",
        ),
        MetricDef(
            "tokens_per_chunk",
            "tok",
            "",
            "tokens per gap: (completion tokens - tokens of the first chunk) / (token-bearing chunks - 1), the tokens each itl_s gap brought (speculation packs several per chunk)",
            "tok/chunk, mean",
            "decode",
        ),
        MetricDef(
            "acceptance_rate",
            "ratio",
            "higher",
            "delta accepted draft tokens / delta proposed draft tokens, engine counters over the window",
            "acceptance",
            "acceptance",
            shown_in=("decode", "concurrency"),
        ),
        MetricDef(
            "acceptance_by_position",
            "ratios",
            "higher",
            "for draft position i = 1..k: delta accepted at position i / delta drafts",
            "accepted by position",
            "acceptance",
            shown_in=("decode",),
        ),
        MetricDef(
            "tokens_per_pass",
            "tok",
            "higher",
            "1 + delta accepted / delta drafts (acceptance length)",
            "tok/pass",
            "acceptance",
            shown_in=("decode", "concurrency"),
            compared=True,
        ),
        MetricDef(
            "cached_prompt_tokens",
            "tok",
            "",
            "prompt tokens served from the prefix cache, as the engine reports them",
            "cached",
            "cache",
            shown_in=("prefill",),
        ),
        MetricDef(
            "kv_cache_tokens",
            "tok",
            "higher",
            "KV cache capacity the engine reports at start",
            "KV capacity",
            "capacity",
        ),
        MetricDef(
            "output_identical",
            "bool",
            "",
            "at temperature 0, completion equals the drafter=none completion of the same prompt",
            "identical",
            "identity",
        ),
        MetricDef(
            "task_score",
            "ratio",
            "higher",
            "share of a task's items answered right (lm-eval's per-item score, averaged; partial "
            "credit counts its share), over eval_items items",
            "score",
            "scores",
        ),
        MetricDef(
            "reasoning_tokens",
            "tok",
            "",
            "tokens of a request's reasoning (a reasoning_content delta, or text inside <think> ... "
            "</think>), mean over the requests that reasoned; null where none did",
            "reasoning tokens",
            "thinking",
        ),
        MetricDef(
            "time_to_answer_s",
            "s",
            "lower",
            "request sent -> first chunk carrying answer tokens, after the reasoning (ttft_s is the "
            "first token of either); null where no request reasoned",
            "time to answer",
            "thinking",
        ),
        MetricDef(
            "reasoning_tps",
            "tok/s",
            "higher",
            "(reasoning tokens - 1) / (last reasoning chunk - first), one request; null where none "
            "reasoned",
            "reasoning, tok/s",
            "thinking",
        ),
        MetricDef(
            "answer_tps",
            "tok/s",
            "higher",
            "(answer tokens - 1) / (last answer chunk - first answer chunk), one request that "
            "reasoned first; null where none did",
            "answer, tok/s",
            "thinking",
        ),
        MetricDef(
            "mean_power_w",
            "W",
            "",
            "GPU energy over the window / window duration (NVML, every GPU the server uses)",
            "power",
            "energy",
        ),
        MetricDef(
            "energy_j_per_token",
            "J/tok",
            "lower",
            "GPU energy over the window / completion tokens of the window; with max_tokens = 1, / uncached prompt tokens",
            "energy/tok",
            "energy",
        ),
        MetricDef(
            "usd_per_mtok",
            "$/Mtok",
            "lower",
            "the bill from time: hourly price (usd_per_gpu_hour x gpu_count; x 1 for a CPU-only "
            "server) x 10^6 / (3600 x aggregate_tps), US dollars per million completion tokens; "
            "null without a price, with max_tokens = 1 or with gpu_count unknown",
            "bill, time",
            "cost",
        ),
        MetricDef(
            "usd_per_mtok_energy",
            "$/Mtok",
            "lower",
            "the bill from energy: energy_j_per_token x 10^6 / (3.6 x 10^6 J per kWh) x usd_per_kwh, US "
            "dollars of the GPUs' measured energy per million completion tokens; null without a "
            "price, with max_tokens = 1 or without measured energy",
            "bill, energy",
            "energy_cost",
        ),
        MetricDef(
            "achieved_rate_rps",
            "req/s",
            "",
            "open-loop: requests sent per second, (requests - 1) / (last send - first send), every repeat's median",
            "achieved rate",
            "load",
        ),
        MetricDef(
            "scheduled_rate_rps",
            "req/s",
            "",
            "open-loop: the same over the arrival schedule the client was given (what request_rate drew for this window)",
            "scheduled rate",
            "load",
        ),
        MetricDef(
            "slo_attainment",
            "ratio",
            "higher",
            "share of a point's requests (every repeat) that finished without error with ttft_s, tpot_s and e2e_s each within the SLO set for it (slo.*)",
            "SLO attainment",
            "load",
        ),
        MetricDef(
            "goodput_rps",
            "req/s",
            "higher",
            "requests meeting every SLO per second: open-loop, slo_attainment x achieved_rate_rps of each repeat; a closed-loop burst, such requests / (last token of any - first sent); every repeat's median",
            "goodput",
            "load",
        ),
        MetricDef(
            "ttft_queue_s",
            "s",
            "lower",
            "TTFT part: the engine's own wait from receiving the request to first scheduling it (vLLM queue_time_ms), one request",
            "TTFT queue",
            "ttft",
        ),
        MetricDef(
            "ttft_engine_s",
            "s",
            "lower",
            "TTFT part: the engine's own time from first scheduling to the first token: prefill of the uncached tail, a hybrid's state copy, the sampling step (vLLM time_to_first_token_ms, llama-server prompt_ms), one request",
            "TTFT engine",
            "ttft",
        ),
        MetricDef(
            "ttft_frontend_s",
            "s",
            "lower",
            "TTFT part: ttft_s - ttft_queue_s - ttft_engine_s, what the request spent outside the engine core (HTTP, chat template, tokenization, detokenization, streaming), one request",
            "TTFT frontend",
            "ttft",
        ),
    )
}

DISTRIBUTED = {
    "ttft": ("TTFT", "ttft_s of each request", "ttft"),
    "tpot": ("TPOT", "tpot_s of each request (per token)", "decode"),
    "chunk_gap": (
        "chunk gap",
        "every gap between consecutive token-bearing chunks of every request (per chunk)",
        "decode",
    ),
    "e2e": ("e2e", "e2e_s of each request: request sent -> last token-bearing chunk", "e2e"),
}
"""Latency distributions over the requests of a measurement's window set (every repeat, pooled): key ->
(label, what is distributed, relevance family)."""
STATS = ("p50", "p90", "p99", "mean")
for _key, (_label, _what, _family) in DISTRIBUTED.items():
    for _stat in STATS:
        _name = f"{_key}_{_stat}_s"
        METRICS[_name] = MetricDef(
            _name,
            "s",
            "lower",
            f"{_stat} over the requests of every repeat of a point: {_what}",
            f"{_label} {_stat}",
            _family,
        )


def metrics_of_family(family: str) -> tuple[str, ...]:
    """The metrics of one relevance family, in the order of METRICS."""
    return tuple(m.name for m in METRICS.values() if m.family == family)


def shown_in(table: str) -> tuple[str, ...]:
    """The metrics a report table shows as columns, in the order of METRICS."""
    return tuple(m.name for m in METRICS.values() if table in m.shown_in)


COMPARED = tuple(m.name for m in METRICS.values() if m.compared)
"""The figures `--compare` judges, where both sweeps have them."""
