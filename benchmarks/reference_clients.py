"""Minimal streaming clients, the yardsticks of benchmarks/client_timing.py.

Each sends a window of prepared (path, body bytes) requests at once over connections opened
beforehand, and stamps `sent` right before handing each request to the HTTP stack and every
network read that brought SSE data. Nothing else is done per chunk: bytes are kept and parsed
after the window. They time exactly what specexp's client times (TTFT from `sent` to the first
token-bearing chunk), with the least code that can, so any extra error is specexp's.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import httpx


def events(reads: list[tuple[float, bytes]]) -> list[tuple[float, dict[str, Any]]]:
    """(arrival of the read that completed it, chunk) for every `data:` JSON event."""
    out: list[tuple[float, dict[str, Any]]] = []
    buf = b""
    for t, data in reads:
        buf += data
        *complete, buf = buf.split(b"\n\n")
        for event in complete:
            for line in event.split(b"\n"):
                if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                    out.append((t, json.loads(line[5:])))
    return out


async def _aiohttp_one(session: aiohttp.ClientSession, url: str, body: bytes) -> dict[str, Any]:
    reads: list[tuple[float, bytes]] = []
    sent = time.perf_counter()
    async with session.post(
        url, data=body, headers={"content-type": "application/json"}
    ) as response:
        async for data in response.content.iter_any():
            reads.append((time.perf_counter(), data))
    return {"sent": sent, "reads": reads}


async def _aiohttp_window(base: str, requests: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(
        base, connector=connector, timeout=aiohttp.ClientTimeout(total=600)
    ) as session:

        async def warm() -> None:
            async with session.get("/health") as r:
                await r.read()

        await asyncio.gather(*(warm() for _ in requests))
        return list(await asyncio.gather(*(_aiohttp_one(session, p, b) for p, b in requests)))


async def _httpx_one(client: httpx.AsyncClient, url: str, body: bytes) -> dict[str, Any]:
    reads: list[tuple[float, bytes]] = []
    sent = time.perf_counter()
    async with client.stream(
        "POST", url, content=body, headers={"content-type": "application/json"}
    ) as response:
        async for data in response.aiter_raw():
            reads.append((time.perf_counter(), data))
    return {"sent": sent, "reads": reads}


async def _httpx_window(base: str, requests: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    n = len(requests) + 1
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=600) as client:
        await asyncio.gather(*(client.get("/health") for _ in requests))
        return list(await asyncio.gather(*(_httpx_one(client, p, b) for p, b in requests)))


def run(kind: str, base: str, requests: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    """Send one window with the `kind` client: aiohttp-uvloop, aiohttp or httpx (asyncio loop)."""
    if kind == "aiohttp-uvloop":
        import uvloop

        return uvloop.run(_aiohttp_window(base, requests))
    if kind == "aiohttp":
        return asyncio.run(_aiohttp_window(base, requests))
    if kind == "httpx":
        return asyncio.run(_httpx_window(base, requests))
    raise ValueError(f"unknown reference client {kind!r}")
