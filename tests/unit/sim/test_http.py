"""specexp.sim's HTTP face (python -m specexp.sim): the simulator behind an OpenAI-compatible HTTP server, in real time.

One server (hardware=h200 model=qwen3.8-27b quantization=fp8 drafter=mtp k=3) runs in a subprocess at --speed 4 for the module;
requests go through specexp's own measurement client (stream_all / to_trace), and what the
client measured is held against the schedule the server records for every chunk
(GET /debug/requests/{id}: sim_t, scheduled and sent on the shared perf_counter clock).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from specexp.measure import metrics
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream, stream_all, to_trace
from specexp.sim.kvcache import DEFAULT_BLOCK_TOKENS as BLOCK_TOKENS
from specexp.sim.kvcache import KvPool
from specexp.simserve.tokens import block_hashes, chat_text, prompt_units
from tests.support.sim_server import sim_server

REPO = Path(__file__).resolve().parents[2]
SPEED = 4.0
K = 3
TOL_S = 0.06
"""Client-vs-schedule tolerance (wall seconds) that holds on a loaded 2-core machine."""
USAGE = {"stream_options": {"include_usage": True, "continuous_usage_stats": True}}


# -- the tokenizer stand-in (no server) ----------------------------------------------------


def test_prompt_tokens_are_four_characters_each_or_token_ids() -> None:
    assert prompt_units("abcd" * 10)[0] == 10
    assert prompt_units("abcde")[0] == 2
    assert prompt_units([5, 6, 7])[0] == 3
    text = chat_text(
        [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        ]
    )
    assert text == "system: be brief\nuser: hi"
    assert prompt_units(text)[0] == math.ceil(len(text) / 4)


def _cache(blocks: int) -> KvPool:
    """A pool that holds `blocks` cached blocks of one byte each."""
    return KvPool(capacity_bytes=float(blocks))


def _store(pool: KvPool, hashes: list[int], snapshots: frozenset[int] | None = None) -> None:
    pinned, _ = pool.insert(hashes, block_bytes=1.0, snapshots=snapshots)
    pool.unpin(pinned)  # the request that computed them is done


def test_prefix_cache_matches_leading_whole_blocks_only() -> None:
    shared = "x" * (4 * BLOCK_TOKENS * 2)  # two whole blocks
    a = block_hashes(prompt_units(shared + "a" * 100)[1])
    b = block_hashes(prompt_units(shared + "b" * 100)[1])
    assert len(a) == 3
    cache = _cache(100)
    assert cache.match(a) == 0
    _store(cache, a)
    assert cache.match(b) == 2
    c = block_hashes(
        prompt_units("y" + shared[1:] + "a" * 100)[1]
    )  # differs in block 0: nothing matches
    assert cache.match(c) == 0
    small = _cache(2)
    _store(small, a)
    assert (
        len(small) == 2 and small.match(a) == 2
    )  # a prefix's tail block is not kept when it does not fit
    _store(small, c)
    assert small.match(a) == 0 and small.match(c) == 2  # least recently used first


def test_blocks_in_use_are_never_evicted() -> None:
    a = block_hashes(prompt_units("p" * 4 * BLOCK_TOKENS * 2)[1])
    c = block_hashes(prompt_units("q" * 4 * BLOCK_TOKENS * 2)[1])
    pool = _cache(2)
    pinned, _ = pool.insert(a, block_bytes=1.0)  # still running: pinned
    assert not pool.reserve(1.0)
    _store(pool, c)
    assert pool.match(a) == 2 and pool.match(c) == 0
    pool.unpin(pinned)
    assert pool.reserve(1.0) and pool.match(a) == 1  # now the least recent blocks make room


def test_hybrid_prefix_resumes_only_at_state_snapshots() -> None:
    units = prompt_units("z" * 4 * 10 * 4)[1]  # 40 tokens: 10 blocks of 4
    hashes = block_hashes(units, 4)
    cache = _cache(100)
    _store(
        cache, hashes, snapshots=frozenset({3, 6, 10})
    )  # chunk ends every 3 blocks, and the last block
    assert cache.match(hashes) == 10
    assert cache.match(hashes, snapshots_only=True) == 10
    assert cache.match(hashes[:9], snapshots_only=True) == 6  # block 9 has no state to resume from
    assert cache.match(hashes[:5], snapshots_only=True) == 3
    assert cache.match(hashes[:2], snapshots_only=True) == 0


# -- the server ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sim_server(
        tmp_path_factory.mktemp("sim_serve"),
        "hardware=h200",
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=mtp",
        f"k={K}",
        speed=SPEED,
        timeout_s=30,
    ) as url:
        yield url


def _chat(
    rid: str,
    max_tokens: int,
    content: str = "Write a Python LRU cache with TTL expiry.",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "model": "Qwen/Qwen3.8-27B",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "temperature": 0.0,
        "stream": True,
        "request_id": rid,
        **extra,
    }


def _stream(url: str, bodies: list[dict[str, Any]]) -> list[RawStream]:
    return asyncio.run(
        stream_all(url, [("/v1/chat/completions", b["request_id"], b) for b in bodies], 30.0)
    )


def _record(url: str, rid: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/debug/requests/{rid}", timeout=5.0)
    assert response.status_code == 200, response.text
    return response.json()


def _metrics(url: str) -> list[promtext.Sample]:
    response = httpx.get(f"{url}/metrics", timeout=5.0)
    assert response.status_code == 200
    families = {f.name for f in text_string_to_metric_families(response.text)}  # the real parser
    assert "vllm:spec_decode_num_drafts" in families
    return promtext.parse(response.text)


def test_health_models_version(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=5.0) as client:
        assert client.get("/health").status_code == 200
        models = client.get("/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["Qwen/Qwen3.8-27B"]
        assert client.get("/version").json()["version"].startswith("specexp-sim")
        assert client.get("/nope").status_code == 404


def test_stream_ends_with_usage_chunk_and_done(base_url: str) -> None:
    body = _chat("done-1", 12, stream_options={"include_usage": True})
    with httpx.Client(base_url=base_url, timeout=10.0) as client:
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            data = [line[5:].strip() for line in response.iter_lines() if line.startswith("data:")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    final = chunks[-1]
    assert final["choices"] == [] and final["usage"]["completion_tokens"] == 12
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert all("usage" not in c for c in chunks[:-1])  # no continuous_usage_stats asked for


def _tokens_for(base_url: str, wall_s: float) -> int:
    """max_tokens whose decode takes about `wall_s` on this server (probed, so that the test
    does not depend on the cost model's numbers)."""
    _stream(base_url, [_chat("probe-1", 32, **USAGE)])
    chunks = _record(base_url, "probe-1")["chunks"][1:]
    per_s = sum(c["tokens"] for c in chunks[1:]) / (
        chunks[-1]["scheduled"] - chunks[0]["scheduled"]
    )
    return max(64, min(5000, int(per_s * wall_s)))


def test_client_timing_matches_the_server_schedule(base_url: str) -> None:
    n = _tokens_for(base_url, 0.45)
    raw = _stream(base_url, [_chat("timing-1", n, **USAGE)])[0]
    trace = to_trace("timing-1", raw)
    assert trace.error is None
    assert trace.completion_tokens == n and sum(e.tokens for e in trace.events) == n
    rec = _record(base_url, "timing-1")
    chunks = rec["chunks"]
    assert len(chunks) == len(trace.events)
    assert [c["tokens"] for c in chunks] == [e.tokens for e in trace.events]
    # Tokens left at their simulated times: never before the schedule, nothing arrived before it left.
    for c, e in zip(chunks, trace.events):
        assert c["scheduled"] == pytest.approx(rec["t0"] + c["sim_t"] / SPEED, abs=1e-6)
        assert c["sent"] >= c["scheduled"]
        assert e.t >= c["sent"] - 5e-4
    span = chunks[-1]["scheduled"] - chunks[0]["scheduled"]
    assert span > 5 * TOL_S, "the schedule is too short for this test to tell pacing from a burst"
    # TTFT and decode as the client measured them vs the server's schedule.
    ttft_schedule = chunks[0]["scheduled"] - raw.sent_at
    assert metrics.ttft_s(trace) == pytest.approx(ttft_schedule, abs=TOL_S)
    assert (rec["arrived"] - rec["t0"]) * SPEED == pytest.approx(rec["sim_arrived"])
    assert metrics.ttft_s(trace) >= (chunks[0]["sim_t"] - rec["sim_arrived"]) / SPEED
    decode = trace.last_token_at - trace.first_token_at  # type: ignore[operator]
    assert decode == pytest.approx(span, abs=TOL_S)
    assert metrics.decode_tps(trace) == pytest.approx((n - 1) / span, rel=TOL_S / span + 0.02)
    late = sorted(e.t - c["scheduled"] for c, e in zip(chunks, trace.events))
    assert late[len(late) // 2] < TOL_S / 3


def test_metrics_count_drafts_tokens_and_prefix_hits(base_url: str) -> None:
    n = 64
    prompt = ("Refactor this module. " + "def f(x):\n    return x + 1\n" * 600)[:13594]
    assert (
        math.ceil(len(f"user: {prompt}") / 4) == 3400
    )  # not a whole number of 16- or 1600-token blocks
    before = _metrics(base_url)
    raw = _stream(base_url, [_chat("metrics-1", n, prompt, **USAGE)])[0]
    after = _metrics(base_url)
    trace = to_trace("metrics-1", raw)
    assert trace.error is None and trace.completion_tokens == n

    def delta(name: str) -> float:
        return (promtext.total(after, name) or 0.0) - (promtext.total(before, name) or 0.0)

    drafts = delta("vllm:spec_decode_num_drafts_total")
    accepted = delta("vllm:spec_decode_num_accepted_tokens_total")
    per_pos = [
        a - b
        for a, b in zip(
            promtext.positions(after, "vllm:spec_decode_num_accepted_tokens_per_pos_total") or (),
            promtext.positions(before, "vllm:spec_decode_num_accepted_tokens_per_pos_total") or (),
        )
    ]
    chunks = _record(base_url, "metrics-1")["chunks"]
    assert delta("vllm:generation_tokens_total") == n
    assert delta("vllm:prompt_tokens_total") == trace.prompt_tokens == 3400
    assert drafts == len(chunks) - 1  # one verify step per chunk after the prefill's token
    assert delta("vllm:spec_decode_num_draft_tokens_total") == K * drafts
    assert len(per_pos) == K and sum(per_pos) == accepted
    assert per_pos == sorted(per_pos, reverse=True)  # position i+1 only after position i
    assert n - 1 <= accepted + drafts <= n - 1 + K  # the last step is cut at max_tokens
    assert delta("vllm:prefix_cache_queries_total") == 3400
    assert delta("vllm:prefix_cache_hits_total") == 0
    # The same prompt again: its whole leading blocks come from the prefix cache, less the last,
    # which MTP needs recomputed for its hidden states (vLLM's use_eagle drop).
    block = int(next(s.labels["block_size"] for s in after if s.name == "vllm:cache_config_info"))
    mid = _metrics(base_url)
    again = to_trace("metrics-2", _stream(base_url, [_chat("metrics-2", 4, prompt, **USAGE)])[0])
    hits = (promtext.total(_metrics(base_url), "vllm:prefix_cache_hits_total") or 0) - (
        promtext.total(mid, "vllm:prefix_cache_hits_total") or 0
    )
    assert again.cached_prompt_tokens == hits == (3399 // block - 1) * block > 0


def test_concurrent_requests_share_forward_passes(base_url: str) -> None:
    n = 48
    bodies = [_chat(f"conc-{i}", n, f"Request {i}: write a tokenizer.", **USAGE) for i in range(4)]
    traces = [to_trace(b["request_id"], raw) for b, raw in zip(bodies, _stream(base_url, bodies))]
    for trace in traces:
        assert trace.error is None
        assert trace.completion_tokens == n and sum(e.tokens for e in trace.events) == n
    steps = [{c["sim_t"] for c in _record(base_url, b["request_id"])["chunks"]} for b in bodies]
    shared = set.intersection(*steps)
    assert len(shared) >= len(min(steps, key=len)) // 2, (
        "the four requests did not share forward passes"
    )


def test_completions_endpoint_non_stream_and_errors(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=10.0) as client:
        r = client.post("/v1/completions", json={"prompt": list(range(40)), "max_tokens": 7})
        assert r.status_code == 200
        body = r.json()
        assert (
            body["object"] == "text_completion" and body["choices"][0]["finish_reason"] == "length"
        )
        assert body["usage"]["prompt_tokens"] == 40 and body["usage"]["completion_tokens"] == 7
        too_long = client.post("/v1/completions", json={"prompt": "hi", "max_tokens": 10**7})
        assert too_long.status_code == 400 and too_long.json()["object"] == "error"
        assert (
            client.post("/v1/completions", json={"model": "other", "prompt": "hi"}).status_code
            == 404
        )


def test_a_client_that_goes_away_is_aborted(base_url: str) -> None:
    import time

    with httpx.Client(base_url=base_url, timeout=10.0) as client:
        with client.stream("POST", "/v1/chat/completions", json=_chat("gone-1", 5000)) as response:
            lines = response.iter_lines()
            assert next(line for line in lines if line.startswith("data:"))
    deadline = time.monotonic() + 5
    while not (rec := _record(base_url, "gone-1"))["finished"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rec["finished"] and rec["aborted"] and rec["completion_tokens"] < 5000
    running = promtext.total(
        promtext.parse(httpx.get(f"{base_url}/metrics").text), "vllm:num_requests_running"
    )
    assert running == 0
