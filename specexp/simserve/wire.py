"""HTTP/1.1 on asyncio streams, as the simulator's server writes it: the request head parsed, and
responses with their status line, headers and a body (JSON or bytes)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return method.upper(), target, version.strip().upper(), headers


def head(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}",
        "server: specexp-sim",
        *(f"{k}: {v}" for k, v in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def respond(writer: asyncio.StreamWriter, status: int, payload: Any, content_type: str) -> None:
    if isinstance(payload, bytes):
        write(writer, status, payload, content_type or "application/octet-stream")
    else:
        write_json(writer, status, payload)


def write(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes,
    content_type: str,
    extra: list[tuple[str, str]] | None = None,
    close: bool = False,
) -> None:
    headers = [("content-type", content_type), ("content-length", str(len(body))), *(extra or [])]
    if close:
        headers.append(("connection", "close"))
    writer.write(head(status, headers) + body)


def write_json(
    writer: asyncio.StreamWriter,
    status: int,
    obj: Any,
    extra: list[tuple[str, str]] | None = None,
    close: bool = False,
) -> None:
    write(writer, status, json.dumps(obj).encode(), "application/json", extra, close)
