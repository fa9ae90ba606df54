"""The HTTP measurement client: async httpx, streamed OpenAI-compatible responses.

Each chunk is timestamped when it arrives (time.perf_counter); TTFT is the first chunk that
carries generated tokens. Token counts come from the server: usage (final, or continuous when
the engine sends it per chunk), llama.cpp `timings`, SGLang `meta_info`. Only where a server
gives none does the trace count chunks and say `token_source: client`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from specexp.events import RequestTrace, TokenEvent


@dataclass
class RawStream:
    """What arrived for one request, before interpretation."""

    sent_at: float
    chunks: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    status: int | None = None
    error: str | None = None
    error_kind: str | None = None
    malformed: int = 0
    done: bool = False
    """The stream ended with `data: [DONE]` (or a finish_reason)."""

    def fail(self, kind: str, message: str) -> None:
        if self.error is None:
            self.error_kind, self.error = kind, message


async def stream_request(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], timeout_s: float, stall_s: float | None = None
) -> RawStream:
    """POST `body` with stream=true and collect every SSE `data:` chunk with its arrival time.

    Never raises for what a server does: HTTP errors, hangs (no chunk for `stall_s`), dropped
    connections, malformed or truncated streams end up in `error_kind` / `error`.
    """
    raw = RawStream(sent_at=time.perf_counter())
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("POST", url, json=body) as response:
                raw.status = response.status_code
                if response.status_code != 200:
                    text = (await response.aread()).decode("utf-8", errors="replace")
                    raw.fail(_status_kind(response.status_code), f"HTTP {response.status_code}: {text[:500]}")
                    return raw
                await _read_events(response, raw, stall_s)
    except TimeoutError:
        raw.fail("timeout", f"no complete response after {timeout_s:g} s")
    except httpx.ReadTimeout:
        raw.fail("stalled", f"no byte from the server for {stall_s or timeout_s:g} s")
    except httpx.HTTPError as err:
        raw.fail("connection", f"{type(err).__name__}: {err}")
    if raw.error is None and not raw.done:
        raw.fail("truncated_stream", "the stream ended without [DONE] or a finish_reason")
    return raw


async def _read_events(response: httpx.Response, raw: RawStream, stall_s: float | None) -> None:
    lines = response.aiter_lines().__aiter__()
    while True:
        try:
            line = await asyncio.wait_for(lines.__anext__(), stall_s) if stall_s else await lines.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            raw.fail("stalled", f"no chunk for {stall_s:g} s")
            return
        now = time.perf_counter()
        if line.startswith("{"):  # NDJSON (Ollama's native API): one JSON object a line, the last "done": true
            data = line
        elif not line.startswith("data:"):
            continue
        else:
            data = line[5:].strip()
        if data == "[DONE]":
            raw.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raw.malformed += 1
            continue
        if isinstance(chunk, dict):
            raw.chunks.append((now, chunk))
            if chunk.get("done") is True or any(isinstance(c, dict) and c.get("finish_reason") for c in chunk.get("choices") or []):
                raw.done = True


def _status_kind(status: int) -> str:
    if status == 429:
        return "http_429"
    return "http_5xx" if status >= 500 else "http_4xx"


def chunk_text(chunk: dict[str, Any]) -> str:
    """Generated text of one chunk (chat delta content or reasoning, or completion text)."""
    choices = chunk.get("choices") or []
    if not choices and isinstance(chunk.get("message"), dict):  # Ollama native /api/chat
        return "".join(str(chunk["message"].get(k) or "") for k in ("thinking", "content"))
    if not choices and isinstance(chunk.get("response"), str):  # Ollama native /api/generate
        return chunk["response"]
    if not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return "".join(str(delta.get(k) or "") for k in ("reasoning_content", "reasoning", "content"))
    return str(choice.get("text") or "")


def _cumulative_tokens(chunk: dict[str, Any]) -> int | None:
    usage = chunk.get("usage")
    if isinstance(usage, dict) and chunk.get("choices"):
        value = usage.get("completion_tokens")
        if isinstance(value, int):
            return value
    timings = chunk.get("timings")
    if isinstance(timings, dict) and isinstance(timings.get("predicted_n"), int):
        return int(timings["predicted_n"])
    return None


def to_trace(request_id: str, raw: RawStream, details: Callable[[RawStream], dict[str, Any]] | None = None) -> RequestTrace:
    """Interpret a raw stream: token events, server token counts, engine timings."""
    events: list[TokenEvent] = []
    texts: list[str] = []
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    finish: str | None = None
    seen, tracked = 0, False
    for t, chunk in raw.chunks:
        text = chunk_text(chunk)
        cumulative = _cumulative_tokens(chunk)
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            timings = chunk["timings"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                finish = str(choice["finish_reason"])
        if chunk.get("done_reason"):  # Ollama native
            finish = str(chunk["done_reason"])
        grew = cumulative - seen if cumulative is not None else 0
        # A chunk carries tokens when it has text, or when a per-chunk count (continuous usage,
        # per-token timings) that was already being tracked grew; a final summary chunk with
        # the whole count and no text is not a token event.
        if text or (tracked and grew > 0):
            events.append(TokenEvent(t=t, tokens=grew if grew > 0 else 1))
            texts.append(text)
        if cumulative is not None:
            tracked = tracked or bool(text)
            seen = max(seen, cumulative)
    extra = details(raw) if details else {}
    completion = _first_int(extra.get("completion_tokens"), (usage or {}).get("completion_tokens"),
                            (timings or {}).get("predicted_n"))
    prompt = _first_int(extra.get("prompt_tokens"), (usage or {}).get("prompt_tokens"))
    cached = _first_int(extra.get("cached_tokens"), ((usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens"),
                        (timings or {}).get("cache_n"))
    source = "server"
    if completion is None:
        completion, source = sum(e.tokens for e in events), "client"
    engine_timings = extra.get("engine_timings") or timings
    if raw.malformed:
        raw.fail("malformed_stream", f"{raw.malformed} chunk(s) of the stream were not valid JSON")
    if not events:
        raw.fail("no_tokens", "the stream carried no generated token")
    error, error_kind = raw.error, raw.error_kind
    return RequestTrace(
        request_id=request_id, sent_at=raw.sent_at, events=tuple(events), prompt_tokens=prompt,
        completion_tokens=completion, cached_prompt_tokens=cached, token_source=source,  # type: ignore[arg-type]
        text="".join(texts), finish_reason=finish, engine_timings=engine_timings, error=error, error_kind=error_kind,
    )


def _first_int(*values: Any) -> int | None:
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            return int(value)
    return None


async def stream_all(
    base_url: str,
    bodies: Sequence[tuple[str, str, dict[str, Any]]],
    timeout_s: float,
    headers: dict[str, str] | None = None,
    stall_s: float | None = None,
) -> list[RawStream]:
    """Send every (path, request id, body) at once; return the raw streams in order."""
    limits = httpx.Limits(max_connections=max(len(bodies), 1) + 4, max_keepalive_connections=max(len(bodies), 1) + 4)
    # httpx's read timeout bounds every wait for bytes, the response headers included: a server
    # that stops answering mid-request is a stalled request after stall_s, not after timeout_s.
    timeout = httpx.Timeout(timeout_s, connect=30.0, read=stall_s or timeout_s)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, limits=limits, timeout=timeout) as client:
        return list(await asyncio.gather(*(stream_request(client, path, body, timeout_s, stall_s) for path, _, body in bodies)))
