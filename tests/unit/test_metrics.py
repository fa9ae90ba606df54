"""specexp.measure.metrics on hand-built event streams: each metric as docs/vocabulary.md section 2 defines it."""

from __future__ import annotations

import pytest

from specexp.measure.events import Counters, RequestTrace, TokenEvent
from specexp.measure.metrics import (
    acceptance_by_position,
    acceptance_rate,
    aggregate_tps,
    decode_tps,
    e2e_tps,
    itl_s,
    latency_distributions,
    per_stream_tps,
    prefill_tps,
    tokens_per_chunk,
    tokens_per_pass,
    tpot_s,
    ttft_s,
    window_metrics,
)
from specexp.measure.reads import read_resolved, reads
from specexp.measure.reasoning_streams import answer_tps, reasoning_tps
from specexp.spec.vocabulary import METRICS

VOCABULARY_METRICS = (
    "decode_tps",
    "e2e_tps",
    "aggregate_tps",
    "per_stream_tps",
    "ttft_s",
    "prefill_tps",
    "tpot_s",
    "itl_s",
    "acceptance_rate",
    "acceptance_by_position",
    "tokens_per_pass",
    "cached_prompt_tokens",
    "kv_cache_tokens",
    "output_identical",
)


def trace(
    events: list[tuple[float, int]],
    sent_at: float = 0.0,
    prompt_tokens: int | None = 100,
    cached: int | None = None,
    request_id: str = "r",
) -> RequestTrace:
    evs = tuple(TokenEvent(t=t, tokens=n) for t, n in events)
    return RequestTrace(
        request_id=request_id,
        sent_at=sent_at,
        events=evs,
        prompt_tokens=prompt_tokens,
        completion_tokens=sum(n for _, n in events),
        cached_prompt_tokens=cached,
    )


# One request sent at t=10: first token at 10.5 (TTFT 0.5), then 10 more tokens one per 0.1 s.
STEADY = trace([(10.5, 1)] + [(10.5 + 0.1 * i, 1) for i in range(1, 11)], sent_at=10.0)
# Speculative decoding: 1 token, then chunks of 3, 1, 4 tokens.
MULTI = trace([(1.0, 1), (1.2, 3), (1.4, 1), (1.6, 4)], sent_at=0.0)


def test_every_vocabulary_metric_describes_itself() -> None:
    for name in VOCABULARY_METRICS:
        m = METRICS[name]
        assert m.name == name and m.unit and m.definition
    assert METRICS["ttft_s"].better == "lower" and METRICS["decode_tps"].better == "higher"
    assert METRICS["tpot_s"].better == "lower" and METRICS["tokens_per_pass"].better == "higher"


def test_ttft_is_send_to_first_token() -> None:
    assert ttft_s(STEADY) == pytest.approx(0.5)
    assert ttft_s(MULTI) == pytest.approx(1.0)


def test_decode_tps_excludes_ttft() -> None:
    # (11 - 1) tokens over 10.5 -> 11.5
    assert decode_tps(STEADY) == pytest.approx(10.0)
    slow_start = trace([(30.5, 1)] + [(30.5 + 0.1 * i, 1) for i in range(1, 11)], sent_at=10.0)
    assert decode_tps(slow_start) == pytest.approx(decode_tps(STEADY))


def test_e2e_tps_includes_ttft() -> None:
    assert e2e_tps(STEADY) == pytest.approx(11 / 1.5)
    slow_start = trace([(30.5, 1)] + [(30.5 + 0.1 * i, 1) for i in range(1, 11)], sent_at=10.0)
    assert e2e_tps(slow_start) == pytest.approx(11 / 21.5)


def test_tpot_is_latency_after_first_token_per_remaining_token() -> None:
    assert tpot_s(STEADY) == pytest.approx(0.1)
    # e2e latency 1.6, ttft 1.0, 9 tokens -> 0.6 / 8
    assert tpot_s(MULTI) == pytest.approx(0.6 / 8)


def test_itl_and_tokens_per_chunk_with_multi_token_chunks() -> None:
    assert itl_s(MULTI) == pytest.approx(0.2)  # gaps between chunks, not between tokens
    # the 3 gaps brought 3 + 1 + 4 tokens: tokens per chunk explains the gaps, so per-chunk ITL
    # over tokens per chunk is the per-token TPOT
    assert tokens_per_chunk(MULTI) == pytest.approx(8 / 3)
    assert itl_s(MULTI) / tokens_per_chunk(MULTI) == pytest.approx(tpot_s(MULTI))
    assert decode_tps(MULTI) == pytest.approx(8 / 0.6)


def test_single_token_request_has_ttft_but_no_decode_rate() -> None:
    one = trace([(0.25, 1)], sent_at=0.0)
    assert ttft_s(one) == pytest.approx(0.25)
    assert decode_tps(one) is None and tpot_s(one) is None and itl_s(one) is None
    assert e2e_tps(one) == pytest.approx(4.0)


def test_request_without_tokens_has_no_metrics() -> None:
    empty = trace([], sent_at=0.0)
    assert ttft_s(empty) is None and e2e_tps(empty) is None and decode_tps(empty) is None


def test_chunks_without_tokens_do_not_count() -> None:
    with_role_chunk = trace(
        [(0.1, 0), (1.0, 1), (1.2, 3), (1.4, 1), (1.6, 4), (1.7, 0)], sent_at=0.0
    )
    assert ttft_s(with_role_chunk) == pytest.approx(ttft_s(MULTI))
    assert itl_s(with_role_chunk) == pytest.approx(itl_s(MULTI))
    assert tokens_per_chunk(with_role_chunk) == pytest.approx(tokens_per_chunk(MULTI))
    assert decode_tps(with_role_chunk) == pytest.approx(decode_tps(MULTI))


def test_a_stream_the_client_read_in_bulk_has_no_decode_rate() -> None:
    # The client stamps each network read once, so chunks that share a stamp came in one read. A
    # client that fell behind finds a whole stream waiting: the first token alone, the other 31 in
    # one read 50 us later would give (32 - 1) / 50e-6 = 620,000 tok/s.
    bulk = trace([(1.0, 1)] + [(1.00005, 1)] * 31, sent_at=0.0)
    assert reads(bulk) == 2 and len(bulk.token_events) == 32 and not read_resolved(bulk)
    assert decode_tps(bulk) is None and tpot_s(bulk) is None and itl_s(bulk) is None
    assert ttft_s(bulk) == pytest.approx(1.0) and e2e_tps(bulk) is not None
    # Read in one piece, a stream has no span at all.
    whole = trace([(1.0, 1)] * 8)
    assert reads(whole) == 1 and not read_resolved(whole) and decode_tps(whole) is None


def test_an_end_read_may_hold_a_tenth_of_the_stream_beyond_one_chunk() -> None:
    # 32 chunks read one by one but the first 4 or 5 together: 3 beyond one are within a tenth of the
    # 31 after the first (3.1), 4 are not.
    def late_start(together: int) -> RequestTrace:
        return trace([(1.0, 1)] * together + [(1.0 + 0.01 * i, 1) for i in range(1, 33 - together)])

    assert read_resolved(late_start(4)) and decode_tps(late_start(4)) == pytest.approx(31 / 0.28)
    assert not read_resolved(late_start(5)) and decode_tps(late_start(5)) is None
    # The same at the last read.
    late_end = trace([(1.0 + 0.01 * i, 1) for i in range(27)] + [(1.3, 1)] * 5)
    assert not read_resolved(late_end) and tpot_s(late_end) is None


def test_a_stream_in_two_reads_does_not_resolve_unless_it_is_two_chunks() -> None:
    # Four chunks in two reads 10 us apart would give 300,000 tok/s; three in two reads, up to twice the
    # rate; two chunks in two reads are one gap, read as it came.
    assert decode_tps(trace([(1.0, 1), (1.0, 1), (1.00001, 1), (1.00001, 1)])) is None
    assert decode_tps(trace([(1.0, 1), (1.1, 1), (1.1, 1)])) is None
    assert decode_tps(trace([(1.0, 1), (1.1, 1)])) == pytest.approx(10.0)


def test_the_last_read_may_hold_one_chunk_more_but_not_the_first() -> None:
    # The simulator releases a step's tokens when the next step launches, and at a stream's end two
    # steps' tokens can leave together; a client has no such excuse at the first read.
    assert read_resolved(trace([(1.0, 1), (1.1, 1), (1.2, 1), (1.2, 1)]))
    assert not read_resolved(trace([(1.0, 1), (1.0, 1), (1.1, 1), (1.2, 1)]))


def test_an_end_read_no_larger_than_the_reads_between_resolves() -> None:
    # llama-server sends each token a speculative step accepted as a chunk of its own, and a client
    # that keeps up reads a step's chunks together: 1 token, then steps of 5, 2, 5, 4 tokens, the
    # last step's 4 in the last read. Its span is the steps', so it resolves.
    steps = [(1.0, 1)] + [(1.1, 1)] * 5 + [(1.2, 1)] * 2 + [(1.3, 1)] * 5 + [(1.4, 1)] * 4
    spec = trace(steps)
    assert reads(spec) == 5 and read_resolved(spec) and decode_tps(spec) == pytest.approx(16 / 0.4)
    # Several chunks in one read in the middle of a stream move neither end of its span.
    middle = trace([(1.0, 1), (1.1, 1), (1.3, 1), (1.3, 1), (1.3, 1), (1.4, 1), (1.5, 1)])
    assert reads(middle) == 5 and decode_tps(middle) == pytest.approx(6 / 0.5)
    # Several tokens in one chunk (vLLM's and SGLang's speculative steps) are one chunk.
    assert reads(MULTI) == 4 and decode_tps(MULTI) == pytest.approx(8 / 0.6)
    assert decode_tps(STEADY) == pytest.approx(10.0)


def test_a_window_leaves_out_the_streams_read_in_bulk() -> None:
    kept = trace([(1.0 + 0.1 * i, 1) for i in range(11)], request_id="kept")
    bulk = trace([(1.0, 1)] + [(1.00005, 1)] * 31, request_id="bulk")
    window = window_metrics([kept, bulk], Counters(), prefill_only=False)
    assert window["decode_tps"] == pytest.approx(decode_tps(kept))
    assert window["tpot_s"] == pytest.approx(tpot_s(kept))
    spread = latency_distributions([kept, bulk], prefill_only=False)
    assert spread["chunk_gap_p50_s"] == pytest.approx(0.1)  # not the bulk read's zero gaps


def test_a_reasoning_stream_read_in_bulk_has_no_rates() -> None:
    events = [TokenEvent(t=1.0, tokens=1, reasoning=True)] + [
        TokenEvent(t=1.00005, tokens=1, reasoning=i < 15) for i in range(31)
    ]
    bulk = RequestTrace(
        request_id="r", sent_at=0.0, events=tuple(events), prompt_tokens=10, completion_tokens=32
    )
    assert reasoning_tps(bulk) is None and answer_tps(bulk) is None


def test_prefill_tps_subtracts_cached_prompt_tokens() -> None:
    cold = trace([(0.5, 1)], prompt_tokens=1000, cached=0)
    warm = trace([(0.1, 1)], prompt_tokens=1000, cached=800)
    unknown_cache = trace([(0.5, 1)], prompt_tokens=1000, cached=None)
    assert prefill_tps(cold) == pytest.approx(2000.0)
    assert prefill_tps(warm) == pytest.approx(2000.0)  # 200 uncached tokens in 0.1 s
    assert prefill_tps(unknown_cache) == pytest.approx(2000.0)


def test_aggregate_tps_spans_first_send_to_last_token_of_any_request() -> None:
    a = trace([(1.0, 1), (2.0, 9)], sent_at=0.0, request_id="a")
    b = trace([(1.5, 1), (4.0, 19)], sent_at=0.5, request_id="b")
    assert aggregate_tps([a, b]) == pytest.approx(30 / 4.0)
    # Not the sum of per-request rates, not their mean.
    assert aggregate_tps([a, b]) != pytest.approx(e2e_tps(a) + e2e_tps(b))  # type: ignore[operator]


def test_per_stream_tps_is_the_mean_of_e2e_tps() -> None:
    a = trace([(1.0, 1), (2.0, 9)], sent_at=0.0, request_id="a")
    b = trace([(1.5, 1), (4.0, 19)], sent_at=0.5, request_id="b")
    assert per_stream_tps([a, b]) == pytest.approx((10 / 2.0 + 20 / 3.5) / 2)


def test_aggregate_exceeds_per_stream_when_requests_overlap() -> None:
    streams = [trace([(1.0, 1), (3.0, 99)], sent_at=0.0, request_id=str(i)) for i in range(4)]
    assert aggregate_tps(streams) == pytest.approx(4 * per_stream_tps(streams))  # type: ignore[operator]


# --- counters ---------------------------------------------------------------------------

BEFORE = Counters(
    drafts=100,
    draft_tokens=300,
    accepted=150,
    accepted_per_position=(80, 50, 20),
    prompt_tokens=1000,
    cached_prompt_tokens=0,
    generation_tokens=400,
)
AFTER = Counters(
    drafts=140,
    draft_tokens=420,
    accepted=220,
    accepted_per_position=(112, 78, 30),
    prompt_tokens=1500,
    cached_prompt_tokens=64,
    generation_tokens=600,
)


def test_counter_delta_subtracts_every_counter() -> None:
    d = AFTER.delta(BEFORE)
    assert (d.drafts, d.draft_tokens, d.accepted) == (40, 120, 70)
    assert d.accepted_per_position == (32, 28, 10)
    assert (d.prompt_tokens, d.cached_prompt_tokens, d.generation_tokens) == (500, 64, 200)


def test_counter_delta_keeps_unexposed_counters_unknown() -> None:
    d = Counters(generation_tokens=10).delta(Counters(generation_tokens=4))
    assert d.drafts is None and d.accepted is None and d.accepted_per_position is None
    assert d.generation_tokens == 6


def test_acceptance_metrics_come_from_the_window_delta_only() -> None:
    d = AFTER.delta(BEFORE)
    assert acceptance_rate(d) == pytest.approx(70 / 120)
    assert acceptance_by_position(d) == pytest.approx([32 / 40, 28 / 40, 10 / 40])
    assert tokens_per_pass(d) == pytest.approx(1 + 70 / 40)
    # The cumulative counters would give different figures: the window is what counts.
    assert acceptance_rate(AFTER) != pytest.approx(acceptance_rate(d))


def test_acceptance_by_position_sums_to_accepted_per_draft() -> None:
    d = AFTER.delta(BEFORE)
    assert sum(acceptance_by_position(d) or []) == pytest.approx(tokens_per_pass(d) - 1)  # type: ignore[operator]


def test_no_drafts_means_no_acceptance_figures() -> None:
    d = Counters(drafts=0, draft_tokens=0, accepted=0, accepted_per_position=(0, 0, 0))
    assert (
        acceptance_rate(d) is None
        and acceptance_by_position(d) is None
        and tokens_per_pass(d) is None
    )
    assert acceptance_rate(Counters()) is None


def test_window_metrics_average_requests_and_use_the_delta() -> None:
    a = trace([(1.0, 1), (2.0, 9)], sent_at=0.0, request_id="a", cached=16)
    b = trace([(1.5, 1), (4.0, 19)], sent_at=0.5, request_id="b", cached=0)
    out = window_metrics([a, b], AFTER.delta(BEFORE), prefill_only=False)
    assert out["ttft_s"] == pytest.approx((1.0 + 1.0) / 2)
    assert out["decode_tps"] == pytest.approx((9 / 1.0 + 19 / 2.5) / 2)
    assert out["aggregate_tps"] == pytest.approx(30 / 4.0)
    assert out["acceptance_rate"] == pytest.approx(70 / 120)
    assert out["tokens_per_pass"] == pytest.approx(1.0 + 70 / 40)
    assert out["cached_prompt_tokens"] == 16
    assert "prefill_tps" not in out or out["prefill_tps"] is None


def test_window_metrics_prefill_only() -> None:
    a = trace([(0.5, 1)], prompt_tokens=1000, cached=0, request_id="a")
    out = window_metrics([a], Counters(), prefill_only=True)
    assert out["prefill_tps"] == pytest.approx(2000.0)
    assert out["ttft_s"] == pytest.approx(0.5)
    assert out["decode_tps"] is None and out["itl_s"] is None
    assert out["acceptance_rate"] is None


def test_window_metrics_leave_failed_requests_out() -> None:
    good = trace([(1.0, 1), (2.0, 9)], sent_at=0.0, request_id="good")
    bad = RequestTrace(
        request_id="bad",
        sent_at=0.0,
        events=(TokenEvent(9.0, 1),),
        prompt_tokens=100,
        completion_tokens=1,
        error="connection reset",
    )
    out = window_metrics([good, bad], Counters(), prefill_only=False)
    assert out["ttft_s"] == pytest.approx(1.0)
    assert out["aggregate_tps"] == pytest.approx(10 / 2.0)
