"""The HTTP/1.1 server (asyncio streams, 127.0.0.1 only) in front of the real-time engine.

Streams are sent with chunked transfer encoding, one SSE write per engine step and request,
written by the engine loop itself at the step's end so that no extra task hop delays a chunk.
Connections are kept alive between requests, as httpx expects.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
import traceback
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from specexp.simserve import openai, wire
from specexp.simserve.openai import ApiError, Completion
from specexp.simserve.prometheus import CONTENT_TYPE, Exporter
from specexp.simserve.realtime import Delivery, Job, RealTimeEngine
from specexp.spec.experiment import ExperimentSpec

HOST = "127.0.0.1"
MAX_HEAD_BYTES = 1 << 20
KEEP_RECORDS = 10_000
"""Requests whose per-chunk timings /debug/requests keeps (oldest dropped first)."""


class _Record:
    """What /debug/requests/{id} says about one request."""

    def __init__(self, req: Completion, job: Job, engine: RealTimeEngine) -> None:
        self.req, self.job, self.engine = req, job, engine
        self.response_sent: float | None = None

    def as_dict(self) -> dict[str, Any]:
        req, job = self.req, self.job
        return {
            "request_id": req.request_id,
            "response_id": req.response_id,
            "endpoint": req.kind,
            "stream": req.stream,
            "prompt_tokens": req.prompt_tokens,
            "cached_tokens": job.cached_tokens,
            "max_tokens": req.max_tokens,
            "completion_tokens": job.generated,
            "finished": bool(job.finished and job.finished.done()),
            "aborted": job.aborted,
            "speed": self.engine.speed,
            "t0": self.engine.t0,
            "arrived": job.arrived,
            "sim_arrived": job.sim_arrived,
            "response_sent": self.response_sent,
            "chunks": [d.as_dict() for d in job.deliveries],
        }


class SimServer:
    """An OpenAI-compatible server backed by the simulator, in real time."""

    def __init__(self, spec: ExperimentSpec, speed: float = 1.0, max_lag_s: float = 0.010) -> None:
        self.spec = spec
        self.engine = RealTimeEngine(spec, speed=speed, max_lag_s=max_lag_s)
        rt = spec.runtime
        self.model = rt.served_model_name or spec.model.hf_id or spec.model.name
        self.models = list(
            dict.fromkeys(
                [self.model, spec.model.name, *([spec.model.hf_id] if spec.model.hf_id else [])]
            )
        )
        self.max_model_len = self.engine.max_model_len
        self.exporter = Exporter(self.engine, self.model)
        self.records: OrderedDict[str, _Record] = OrderedDict()
        self.server: asyncio.Server | None = None
        self._engine_task: asyncio.Task[None] | None = None
        self.port: int | None = None

    # -- life ---------------------------------------------------------------------------
    async def start(self, port: int = 0) -> int:
        self._engine_task = asyncio.create_task(self.engine.run())
        self.server = await asyncio.start_server(self._connection, HOST, port, limit=MAX_HEAD_BYTES)
        self.port = int(self.server.sockets[0].getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        if self._engine_task is not None:
            self._engine_task.cancel()
            try:
                await self._engine_task
            except (asyncio.CancelledError, Exception):
                pass

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    # -- HTTP ---------------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    wire.write_json(writer, 431, {"detail": "request head too large"}, close=True)
                    return
                try:
                    method, target, version, headers = wire.parse_head(head)
                    length = int(headers.get("content-length", "0") or 0)
                except ValueError:
                    wire.write_json(writer, 400, {"detail": "malformed request"}, close=True)
                    return
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    wire.write_json(
                        writer,
                        400,
                        {"detail": "chunked request bodies are not supported"},
                        close=True,
                    )
                    return
                body = await reader.readexactly(length) if length > 0 else b""
                arrived = time.perf_counter()
                connection = headers.get("connection", "").lower()
                keep = connection != "close" and (
                    version == "HTTP/1.1" or connection == "keep-alive"
                )
                keep = await self._dispatch(method, target, headers, body, arrived, writer) and keep
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _dispatch(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes,
        arrived: float,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """Answer one request; False when the connection must close."""
        path = unquote(urlsplit(target).path)
        gets: dict[str, Callable[[], tuple[int, Any, str]]] = {
            "/health": lambda: (200, b"", "application/json"),
            "/ping": lambda: (200, b"", "application/json"),
            "/v1/models": self._models,
            "/version": lambda: (200, {"version": self.engine.info.version}, ""),
            "/metrics": lambda: (200, self.exporter.render(), CONTENT_TYPE),
            "/debug/clock": self._clock,
            "/debug/requests": lambda: (
                200,
                {"requests": [r.as_dict() for r in self.records.values()]},
                "",
            ),
        }
        posts: dict[str, Callable[..., Awaitable[bool]]] = {
            "/v1/chat/completions": self._chat,
            "/v1/completions": self._text_completion,
            "/reset_prefix_cache": self._reset_prefix_cache,
        }
        try:
            if method == "GET" and path in gets:
                wire.respond(writer, *gets[path]())
            elif method == "GET" and path.startswith("/debug/requests/"):
                wire.respond(writer, *self._debug_request(path.rsplit("/", 1)[1]))
            elif method == "POST" and path in posts:
                return await posts[path](headers, body, arrived, writer)
            elif path in gets or path in posts:
                wire.write_json(writer, 405, {"detail": "Method Not Allowed"})
            else:
                wire.write_json(writer, 404, {"detail": "Not Found"})
            return True
        except ApiError as err:
            wire.write_json(writer, err.status, err.body())
            return True
        except Exception as err:
            traceback.print_exc(file=sys.stderr)
            wire.write_json(
                writer, 500, ApiError(500, f"{type(err).__name__}: {err}").body(), close=True
            )
            return False

    def _models(self) -> tuple[int, Any, str]:
        created = int(time.time())
        data = [
            {
                "id": self.model,
                "object": "model",
                "created": created,
                "owned_by": "specexp-sim",
                "root": self.model,
                "parent": None,
                "max_model_len": self.max_model_len,
            }
        ]
        return 200, {"object": "list", "data": data}, ""

    def _clock(self) -> tuple[int, Any, str]:
        e = self.engine
        now = time.perf_counter()
        return (
            200,
            {
                "perf_counter": now,
                "t0": e.t0,
                "speed": e.speed,
                "sim_now": e.sim_at(now),
                "engine_clock": e.sim.clock,
                "steps": e.sim.counts.steps,
                "resyncs": e.stats.resyncs,
                "max_lag_s": e.max_lag_s,
                "running": e.running,
                "waiting": e.waiting,
            },
            "",
        )

    def _debug_request(self, rid: str) -> tuple[int, Any, str]:
        for prefix in ("chatcmpl-", "cmpl-"):
            if rid not in self.records and rid.startswith(prefix):
                rid = rid[len(prefix) :]
        record = self.records.get(rid)
        if record is None:
            return 404, {"detail": f"no request '{rid}' (the last {KEEP_RECORDS} are kept)"}, ""
        return 200, record.as_dict(), ""

    async def _reset_prefix_cache(
        self, headers: dict[str, str], body: bytes, arrived: float, writer: asyncio.StreamWriter
    ) -> bool:
        self.engine.reset_prefix_cache()
        wire.write(writer, 200, b"", "application/json")
        return True

    async def _chat(
        self, headers: dict[str, str], body: bytes, arrived: float, writer: asyncio.StreamWriter
    ) -> bool:
        return await self._completion("chat", headers, body, arrived, writer)

    async def _text_completion(
        self, headers: dict[str, str], body: bytes, arrived: float, writer: asyncio.StreamWriter
    ) -> bool:
        return await self._completion("completion", headers, body, arrived, writer)

    async def _completion(
        self,
        kind: Literal["chat", "completion"],
        headers: dict[str, str],
        body: bytes,
        arrived: float,
        writer: asyncio.StreamWriter,
    ) -> bool:
        req = openai.parse(kind, body, headers.get("x-request-id"), self.models, self.max_model_len)
        if self._engine_task is None or self._engine_task.done():
            raise ApiError(500, "the engine loop is not running")
        created = int(time.time())
        if req.stream:
            sink = _stream_sink(req, created, writer)
            writer.write(
                wire.head(
                    200,
                    [
                        ("content-type", "text/event-stream; charset=utf-8"),
                        ("transfer-encoding", "chunked"),
                        ("x-request-id", req.request_id),
                    ],
                )
            )
        else:
            sink = _buffer_sink(writer)
        job = Job(
            request_id=req.request_id,
            prompt_tokens=req.prompt_tokens,
            max_tokens=req.max_tokens,
            units=req.units,
            sink=sink,
            arrived=arrived,
            chat=kind == "chat",
        )
        record = _Record(req, job, self.engine)
        self.records[req.request_id] = record
        self.records.move_to_end(req.request_id)
        while len(self.records) > KEEP_RECORDS:
            self.records.popitem(last=False)
        try:
            await self.engine.submit(job)
        except Exception:
            if req.stream:  # the 200 head is out: all that is left is to cut the stream
                traceback.print_exc(file=sys.stderr)
                return False
            raise
        if job.aborted:
            return False
        if not req.stream:
            payload = openai.full_response(req, created, job.generated, job.cached_tokens)
            wire.write_json(writer, 200, payload, extra=[("x-request-id", req.request_id)])
            record.response_sent = time.perf_counter()
        return True


def _stream_sink(
    req: Completion, created: int, writer: asyncio.StreamWriter
) -> Callable[[Job, Delivery, bool], bool]:
    def sink(job: Job, d: Delivery, final: bool) -> bool:
        if writer.is_closing():
            return False
        start = d.completion_tokens - d.tokens
        text = openai.stream_events(
            req, created, start, d.completion_tokens, job.cached_tokens, final
        )
        payload = text.encode()
        frame = b"%x\r\n%s\r\n" % (len(payload), payload)
        if final:
            frame += b"0\r\n\r\n"
        d.sent = time.perf_counter()
        try:
            writer.write(frame)
        except (ConnectionError, RuntimeError):
            return False
        return True

    return sink


def _buffer_sink(writer: asyncio.StreamWriter) -> Callable[[Job, Delivery, bool], bool]:
    return lambda job, d, final: not writer.is_closing()


async def serve(
    spec: ExperimentSpec,
    port: int = 8000,
    speed: float = 1.0,
    max_lag_s: float = 0.010,
    announce: Callable[[SimServer], None] | None = None,
) -> None:
    """Run a SimServer until SIGINT or SIGTERM."""
    server = SimServer(spec, speed=speed, max_lag_s=max_lag_s)
    await server.start(port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if announce is not None:
        announce(server)
    try:
        await stop.wait()
    finally:
        await server.stop()
