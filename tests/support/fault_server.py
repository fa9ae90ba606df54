"""A small OpenAI-compatible server that misbehaves on purpose, on 127.0.0.1.

The fault is chosen by the URL prefix, so one server serves every case:
`http://127.0.0.1:PORT/<fault>/v1/chat/completions`. Faults:

ok, http_500, http_429, malformed (a chunk that is not JSON), truncated (the stream stops
without [DONE] or a finish_reason), no_usage (no usage chunk), hang (stops sending after a
few chunks and keeps the connection open), die (closes the connection mid-stream),
metrics_missing (/metrics answers 404), metrics_garbage (/metrics is not an exposition).
Hostile faults, each a case a real engine or proxy produces: surrogate (a lone UTF-16 surrogate in
the text), split_emoji (an emoji's two surrogate halves in two chunks), control_text (NUL, ESC, an
OSC title and CR LF in the text), markup_500 (a 500 whose body holds rich markup, ANSI and a forged
progress line), usage_inflated (usage claims 1,000,000 tokens over 8 chunks), metrics_nan (NaN and
+Inf in the speculative counters), counters_reset (every counter lower at each read, as after a
restart), accepted_drops (only the accepted counter goes down), spec_ok (counters that rise as an
engine's do), scripted (chunks, usage and /metrics reads taken from `SCRIPT`, set by a test).
Every request loop is bounded: `hang` holds a connection at most HANG_S seconds.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HANG_S = 30.0
FAULTS = (
    "ok",
    "http_500",
    "http_429",
    "malformed",
    "truncated",
    "no_usage",
    "hang",
    "die",
    "metrics_missing",
    "metrics_garbage",
    "surrogate",
    "split_emoji",
    "control_text",
    "markup_500",
    "usage_inflated",
    "metrics_nan",
    "counters_reset",
    "accepted_drops",
    "spec_ok",
    "scripted",
)
SMALL_JOB = (
    "workload.output_tokens=8",
    "workload.repeats=2",
    "workload.warmup=0",
    "runtime.stall_timeout_s=1",
    "runtime.served_model_name=fault",
    "model=qwen3-8b",
    "quantization=bf16",
)
"""The overrides of a quick job against this server (its URL and runtime given besides)."""
HOSTILE_BODY = "[/bold] \x1b]0;PWNED-TITLE\x07\x1b[2J\r\nINJECTED-LINE ok: fake\x00"
"""The 500 body of `markup_500`: rich markup, an OSC title, a screen clear, a forged line, a NUL."""
SCRIPT: dict[str, object] = {"texts": ["a ", "b "], "usage": 2, "metrics": [{}]}
"""What `scripted` sends: the chunks' texts, the usage count (None: no usage chunk), and one dict
of /metrics values (metric name -> float) per read, the last repeated."""
_READS: dict[str, int] = {}
"""How often each fault's /metrics was read: counters that change from one read to the next."""
METRICS = (
    "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    'vllm:generation_tokens_total{engine="0",model_name="fault"} 0.0\n'
)


def _chunk(text: str, finish: str | None = None) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion.chunk",
        "model": "fault",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _usage(n: int) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion.chunk",
        "model": "fault",
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n},
    }
    return f"data: {json.dumps(body)}\n\n".encode()


async def _respond(
    writer: asyncio.StreamWriter, status: str, body: bytes, ctype: str = "application/json"
) -> None:
    writer.write(
        f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()


def _texts(fault: str, n: int) -> list[str]:
    """The content of each chunk of a stream of `n` chunks."""
    if fault == "scripted":
        return [str(t) for t in SCRIPT["texts"]]  # type: ignore[union-attr]
    texts = [f"t{i} " for i in range(n)]
    if fault == "surrogate":
        texts[1] = "x\ud800y "
    elif fault == "split_emoji" and n >= 3:
        texts[1], texts[2] = "\ud83d", "\ude00 "  # 😀 as a JS server splits it
    elif fault == "control_text":
        texts[1] = "a\x00b\x1b]0;PWNED-TITLE\x07c\x1b[31mred\r\nINJECTED-LINE ok: fake "
    return texts


def _completion_tokens(fault: str, n: int) -> int | None:
    if fault == "scripted":
        return SCRIPT["usage"]  # type: ignore[return-value]
    if fault == "no_usage":
        return None
    return 1_000_000 if fault == "usage_inflated" else n


async def _stream(writer: asyncio.StreamWriter, fault: str, max_tokens: int) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
    texts = _texts(fault, min(max_tokens, 8))
    n = len(texts)
    for i, text in enumerate(texts):
        if fault in ("hang", "die", "truncated") and i == 3:
            if fault == "hang":
                await writer.drain()
                await asyncio.sleep(HANG_S)
            if fault == "die":
                writer.transport.abort()
            return
        if fault == "malformed" and i == 2:
            writer.write(b"data: {not json\n\n")
        writer.write(_chunk(text, "length" if i == n - 1 else None))
        await writer.drain()
        await asyncio.sleep(0.002)
    tokens = _completion_tokens(fault, n)
    if tokens is not None:
        writer.write(_usage(tokens))
    writer.write(b"data: [DONE]\n\n")
    await writer.drain()


SPEC = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
}


def _spec_values(fault: str, read: int) -> dict[str, float]:
    """The speculative counters of `fault` at its `read`-th /metrics read (0-based)."""
    if fault == "scripted":
        reads: list[dict[str, float]] = SCRIPT["metrics"]  # type: ignore[assignment]
        return reads[min(read, len(reads) - 1)] if reads else {}
    rising = {"drafts": 10.0 * read, "draft_tokens": 30.0 * read, "accepted": 20.0 * read}
    if fault == "spec_ok":
        return rising
    if fault == "metrics_nan":
        return {"drafts": float("nan"), "draft_tokens": float("inf"), "accepted": float("nan")}
    if fault == "counters_reset":
        return {k: 1000.0 - v for k, v in rising.items()}
    if fault == "accepted_drops":
        return {**rising, "accepted": 1000.0 - 40.0 * read}
    return {}


def _metrics(fault: str) -> str:
    read = _READS.get(fault, 0)
    _READS[fault] = read + 1
    lines = [METRICS]
    for key, value in _spec_values(fault, read).items():
        name = SPEC.get(key, key)
        lines.append(f"# TYPE {name.removesuffix('_total')} counter\n")
        lines.append(f'{name}{{engine="0",model_name="fault"}} {_number(value)}\n')
    return "".join(lines)


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *headers = head.decode().split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        length = next(
            (int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0
        )
        body = json.loads(await reader.readexactly(length)) if length else {}
        fault, _, rest = path.lstrip("/").partition("/")
        rest = "/" + rest
        if fault not in FAULTS:
            await _respond(writer, "404 Not Found", b'{"error": "unknown fault"}')
        elif rest in ("/health", "/v1/models"):
            await _respond(
                writer,
                "200 OK",
                json.dumps(
                    {"object": "list", "data": [{"id": "fault", "object": "model"}]}
                ).encode(),
            )
        elif rest == "/metrics":
            if fault == "metrics_missing":
                await _respond(writer, "404 Not Found", b"not found", "text/plain")
            elif fault == "metrics_garbage":
                await _respond(writer, "200 OK", b"<html>this is { not prometheus\n", "text/plain")
            else:
                await _respond(
                    writer, "200 OK", _metrics(fault).encode(), "text/plain; version=0.0.4"
                )
        elif method == "POST" and rest in ("/v1/chat/completions", "/v1/completions"):
            if fault == "http_500":
                await _respond(writer, "500 Internal Server Error", b'{"error": "boom"}')
            elif fault == "markup_500":
                await _respond(writer, "500 Internal Server Error", HOSTILE_BODY.encode())
            elif fault == "http_429":
                await _respond(writer, "429 Too Many Requests", b'{"error": "slow down"}')
            else:
                await _stream(writer, fault, int(body.get("max_tokens") or 8))
        else:
            await _respond(writer, "404 Not Found", b"{}")
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        if not writer.transport.is_closing():
            writer.close()


@contextmanager
def fault_server() -> Iterator[str]:
    """Run the server in a thread; yield its base URL (http://127.0.0.1:PORT)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", 0)
        holder["server"] = server
        holder["port"] = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            await server.serve_forever()

    thread = threading.Thread(target=lambda: loop.run_until_complete(_guard(main())), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}"
    finally:

        def shutdown() -> None:
            for task in asyncio.all_tasks(loop):
                task.cancel()

        loop.call_soon_threadsafe(shutdown)
        thread.join(10)
        loop.close()


async def _guard(coro: object) -> None:
    try:
        await coro  # type: ignore[misc]
    except asyncio.CancelledError:
        pass
    finally:  # let cancelled handlers (a held `hang` stream) finish before the loop closes
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        await asyncio.gather(*others, return_exceptions=True)
