"""A pacing server: OpenAI-style streams whose every chunk's send time is stamped.

    .venv/bin/python benchmarks/pacing_server.py --port 0 --ttft-ms 50 --gap-ms 10 --max-chunk 4

It answers POST /v1/chat/completions and /v1/completions (streamed SSE, chunked transfer
encoding, keep-alive) on 127.0.0.1 with a fixed schedule: the first chunk `--ttft-ms` after the
request was read, then one chunk every `--gap-ms`, each carrying 1..`--max-chunk` tokens (or the request
body's `pacer_max_chunk`; a seeded choice per request, so multi-token chunks look like speculative decoding), until
`max_tokens`. Every chunk carries continuous usage (`completion_tokens` so far), then a final
usage chunk and `data: [DONE]`. The response id is `cmpl-<n>`.

Stamps are time.perf_counter (CLOCK_MONOTONIC on Linux, the same clock a client on this host
reads): `arrived` (request head and body read) and `sent` per token-bearing chunk (right before
it is written to the socket). GET /debug/requests/{id} returns one request's stamps,
GET /debug/requests every kept one (and forgets them), GET /health answers 200, GET /v1/models
lists the one model `pacer`. It prints `pacing-server listening on http://127.0.0.1:PORT` when
ready. Written for benchmarks/client_timing.py; it is not part of specexp.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import time
from typing import Any

MODEL = "pacer"


class Pacer:
    def __init__(self, ttft_s: float, gap_s: float, max_chunk: int) -> None:
        self.ttft_s, self.gap_s, self.max_chunk = ttft_s, gap_s, max_chunk
        self.records: dict[str, dict[str, Any]] = {}
        self.ids = itertools.count()

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (x.partition(":") for x in lines[1:] if x)
                }
                length = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(length) if length else b""
                arrived = time.perf_counter()
                if method == "POST" and target in ("/v1/chat/completions", "/v1/completions"):
                    await self.stream(
                        json.loads(body), target.endswith("chat/completions"), arrived, writer
                    )
                else:
                    self.respond(method, target, writer)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    def respond(self, method: str, target: str, writer: asyncio.StreamWriter) -> None:
        status, payload = 200, {"status": "ok"}
        if target == "/v1/models":
            payload = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        elif target == "/debug/requests":
            payload, self.records = {"requests": list(self.records.values())}, {}
        elif target.startswith("/debug/requests/"):
            rec = self.records.get(target.rsplit("/", 1)[1])
            status, payload = (200, rec) if rec else (404, {"detail": "unknown request"})
        elif target not in ("/health", "/"):
            status, payload = 404, {"detail": "not found"}
        data = json.dumps(payload).encode()
        writer.write(
            f"HTTP/1.1 {status} OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n".encode()
            + data
        )

    async def stream(
        self, body: dict[str, Any], chat: bool, arrived: float, writer: asyncio.StreamWriter
    ) -> None:
        rid = f"cmpl-{next(self.ids)}"
        total = int(body.get("max_tokens") or 16)
        most = int(body.get("pacer_max_chunk") or self.max_chunk)
        rng = random.Random(rid)
        record: dict[str, Any] = {"id": rid, "arrived": arrived, "chunks": []}
        self.records[rid] = record
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        envelope = {
            "id": rid,
            "object": "chat.completion.chunk" if chat else "text_completion",
            "model": MODEL,
        }
        done, i = 0, 0
        while done < total:
            n = min(rng.randint(1, most), total - done)
            done += n
            text = " tok" * n
            choice = (
                {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            )
            choice["finish_reason"] = "length" if done == total else None
            usage = {"prompt_tokens": 8, "completion_tokens": done, "total_tokens": 8 + done}
            event = (
                "data: " + json.dumps({**envelope, "choices": [choice], "usage": usage}) + "\n\n"
            )
            if done == total:
                event += (
                    "data: "
                    + json.dumps({**envelope, "choices": [], "usage": usage})
                    + "\n\ndata: [DONE]\n\n"
                )
            due = arrived + self.ttft_s + i * self.gap_s
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            data = event.encode()
            sent = time.perf_counter()
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            record["chunks"].append({"tokens": n, "due": due, "sent": sent})
            await writer.drain()
            i += 1
        writer.write(b"0\r\n\r\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument(
        "--max-chunk", type=int, default=1, help="tokens per chunk: 1..this, seeded per request"
    )
    args = parser.parse_args()
    pacer = Pacer(args.ttft_ms / 1e3, args.gap_ms / 1e3, args.max_chunk)
    server = await asyncio.start_server(pacer.connection, "127.0.0.1", args.port, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"pacing-server listening on http://127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.run(main())
    except KeyboardInterrupt:
        pass
