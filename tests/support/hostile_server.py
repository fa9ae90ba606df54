"""An OpenAI-compatible endpoint on 127.0.0.1 that lists one model and answers every completion
with HTTP 500 and a hostile body: rich markup, an OSC window title, a screen clear, a CR LF and a
forged progress line, a NUL and a DEL. `runtime=openai runtime.url=URL` measures it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOSTILE_BODY = (
    "[/bold] boom \x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[31mred\r\nINJECTED-LINE ok: fake\x00\x7f\x9b1m"
)
MODEL = "hostile"


class _Handler(BaseHTTPRequestHandler):
    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path.rstrip("/") in ("/v1/models", "/health"):
            self._answer(200, json.dumps({"object": "list", "data": [{"id": MODEL}]}).encode())
        else:
            self._answer(404, b"{}")

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer(500, HOSTILE_BODY.encode())

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet: the test's output is what specexp prints."""


@contextmanager
def hostile_server() -> Iterator[str]:
    """Serve in a thread; yield the base URL (http://127.0.0.1:PORT)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
