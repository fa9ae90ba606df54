"""What a streamed response means: SSE reads -> chunks -> a RequestTrace.

Runs after a window, off its clock (specexp.runtimes.http.client only stamps and keeps the bytes).
Token counts come from the server: usage (final, or continuous when the engine sends it per
chunk), llama.cpp `timings`, SGLang `meta_info`. Only where a server gives none does the trace
count chunks and say `token_source: client`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from specexp.measure.events import RequestTrace, TokenEvent
from specexp.record.writable import encodable
from specexp.runtimes.http.reasoning import mark_reasoning, split_chunk


@dataclass
class RawStream:
    """What arrived for one request, before interpretation."""

    sent_at: float
    due_at: float | None = None
    """Open-loop: perf_counter at which the schedule had it sent."""
    free_at: float | None = None
    """Open-loop with a cap: perf_counter at which a slot freed for it (it waited for one)."""
    chunks: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    """(arrival, JSON object) of every SSE `data:` event, filled by `parse_reads`."""
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    """(arrival, bytes) of every network read of the response body, as the client kept them."""
    status: int | None = None
    error: str | None = None
    error_kind: str | None = None
    malformed: int = 0
    done: bool = False
    """The stream ended with `data: [DONE]` (or a finish_reason)."""

    def fail(self, kind: str, message: str) -> None:
        if self.error is None:
            self.error_kind, self.error = kind, message


def parse_reads(raw: RawStream) -> RawStream:
    """Fill `chunks`, `done` and `malformed` from `reads`; an event arrives with the read that
    completed its `data:` line. A stream that ends without [DONE] or a finish_reason is truncated."""
    buf = b""
    for t, data in raw.reads:
        buf += data
        if b"\n" not in data:
            continue
        *lines, buf = buf.split(b"\n")
        for line in lines:
            _line(raw, t, line)
    if buf and raw.reads:
        _line(raw, raw.reads[-1][0], buf)
    raw.reads = []
    if raw.error is None and not raw.done:
        raw.fail("truncated_stream", "the stream ended without [DONE] or a finish_reason")
    return raw


def _line(raw: RawStream, t: float, line: bytes) -> None:
    if line.startswith(
        b"{"
    ):  # NDJSON (Ollama's native API): one JSON object a line, the last "done": true
        data = line.strip()
    elif not line.startswith(b"data:"):
        return
    else:
        data = line[5:].strip()
    if data == b"[DONE]":
        raw.done = True
        return
    try:
        chunk = json.loads(data)
    except ValueError:
        raw.malformed += 1
        return
    if isinstance(chunk, dict):
        raw.chunks.append((t, chunk))
        if chunk.get("done") is True or any(
            isinstance(c, dict) and c.get("finish_reason") for c in chunk.get("choices") or []
        ):
            raw.done = True


def chunk_text(chunk: dict[str, Any]) -> str:
    """Generated text of one chunk (chat delta content or reasoning, or completion text)."""
    reasoning, other = split_chunk(chunk)
    return reasoning + other


def chunk_token_ids(chunk: dict[str, Any]) -> list[int]:
    """The generated token ids a chunk carries, where the server was asked for them (vLLM's
    `return_token_ids`: `choices[0].token_ids`, the chunk's delta)."""
    choices = chunk.get("choices")
    if not choices or not isinstance(choices[0], dict):
        return []
    ids = choices[0].get("token_ids")
    return [int(i) for i in ids] if isinstance(ids, list) else []


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


def to_trace(
    request_id: str,
    raw: RawStream,
    details: Callable[[RawStream], dict[str, Any]] | None = None,
    started_at: float | None = None,
    wall_offset: float | None = None,
) -> RequestTrace:
    """Interpret a raw stream: token events, server token counts, engine timings. With the
    window's `started_at` the trace carries its send lag (behind its due time); with
    `wall_offset` its wall-clock send."""
    events: list[TokenEvent] = []
    texts: list[str] = []
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    finish: str | None = None
    response_id: str | None = None
    seen, tracked = 0, False
    token_ids: list[int] = []
    parts: list[tuple[str, str]] = []  # each event's (reasoning, other) text
    for t, chunk in raw.chunks:
        if response_id is None and isinstance(chunk.get("id"), str):
            response_id = chunk["id"]
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
        ids = chunk_token_ids(chunk)
        token_ids += ids
        if ids and not text:  # tokens that decode to no text yet (a partial UTF-8 character)
            grew, tracked = max(grew, len(ids)), True
        # A chunk carries tokens when it has text, or when a per-chunk count (continuous usage,
        # per-token timings) that was already being tracked grew; a final summary chunk with
        # the whole count and no text is not a token event.
        if text or (tracked and grew > 0):
            events.append(TokenEvent(t=t, tokens=grew if grew > 0 else 1))
            texts.append(text)
            parts.append(split_chunk(chunk))
        if cumulative is not None:
            tracked = tracked or bool(text)
            seen = max(seen, cumulative)
    events = mark_reasoning(events, parts)
    extra = details(raw) if details else {}
    completion = _first_int(
        extra.get("completion_tokens"),
        (usage or {}).get("completion_tokens"),
        (timings or {}).get("predicted_n"),
    )
    prompt = _first_int(extra.get("prompt_tokens"), (usage or {}).get("prompt_tokens"))
    cached = _first_int(
        extra.get("cached_tokens"),
        ((usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens"),
        (timings or {}).get("cache_n"),
    )
    source = "server"
    if completion is None:
        completion, source = sum(e.tokens for e in events), "client"
    engine_timings = extra.get("engine_timings") or timings
    if raw.malformed:
        raw.fail("malformed_stream", f"{raw.malformed} chunk(s) of the stream were not valid JSON")
    if not events:
        raw.fail("no_tokens", "the stream carried no generated token")
    return RequestTrace(
        request_id=request_id,
        sent_at=raw.sent_at,
        events=tuple(events),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_prompt_tokens=cached,
        token_source=source,  # type: ignore[arg-type]
        text=encodable("".join(texts)),  # an emoji split over two chunks joined again
        token_ids=tuple(token_ids) if token_ids else None,
        finish_reason=finish,
        engine_timings=engine_timings,
        error=raw.error,
        error_kind=raw.error_kind,
        response_id=response_id,
        status=raw.status,
        send_lag_s=None
        if started_at is None
        else max(raw.sent_at - max(started_at, raw.due_at or 0.0, raw.free_at or 0.0), 0.0),
        due_at=raw.due_at,
        sent_wall=None if wall_offset is None else raw.sent_at + wall_offset,
    )


def _first_int(*values: Any) -> int | None:
    """The first of `values` that can be a count: a finite number, at least 0."""
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
            return int(value)
    return None
