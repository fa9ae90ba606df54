"""A small OpenAI-compatible server that misbehaves on purpose, on 127.0.0.1.

The fault is chosen by the URL prefix, so one server serves every case:
`http://127.0.0.1:PORT/<fault>/v1/chat/completions`. Faults:

ok, http_500, http_429, malformed (a chunk that is not JSON), truncated (the stream stops
without [DONE] or a finish_reason), no_usage (no usage chunk), hang (stops sending after a
few chunks and keeps the connection open), die (closes the connection mid-stream),
metrics_missing (/metrics answers 404), metrics_garbage (/metrics is not an exposition).
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
)
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


async def _stream(writer: asyncio.StreamWriter, fault: str, max_tokens: int) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
    n = min(max_tokens, 8)
    for i in range(n):
        if fault in ("hang", "die", "truncated") and i == 3:
            if fault == "hang":
                await writer.drain()
                await asyncio.sleep(HANG_S)
            if fault == "die":
                writer.transport.abort()
            return
        if fault == "malformed" and i == 2:
            writer.write(b"data: {not json\n\n")
        writer.write(_chunk(f"t{i} ", "length" if i == n - 1 else None))
        await writer.drain()
        await asyncio.sleep(0.002)
    if fault != "no_usage":
        writer.write(_usage(n))
    writer.write(b"data: [DONE]\n\n")
    await writer.drain()


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
                await _respond(writer, "200 OK", METRICS.encode(), "text/plain; version=0.0.4")
        elif method == "POST" and rest in ("/v1/chat/completions", "/v1/completions"):
            if fault == "http_500":
                await _respond(writer, "500 Internal Server Error", b'{"error": "boom"}')
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
