"""A window's kernel compiles read from the server's Triton cache: SGLang compiles Triton kernels at
first use without a log line (its Gated DeltaNet prefill, one kernel for each new number of tokens),
so a timed window that compiled is known only from the folders it added to that cache."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from specexp.runtimes.base import runtime_for
from specexp.runtimes.http.kernel_cache import KernelCache

STUB = """\
import http.server, os, pathlib, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Serve(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/compile/"):
            # what Triton leaves on a compile: a folder named by the specialisation's hash
            name = self.path.rsplit("/", 1)[1]
            folder = pathlib.Path(os.environ["TRITON_CACHE_DIR"]) / ("H" + str(len(os.listdir(
                os.environ["TRITON_CACHE_DIR"]))) + "ABCDEFGHIJKLMNOPQRSTUV")
            folder.mkdir()
            for suffix in (".json", ".cubin", ".ptx"):
                (folder / (name + suffix)).write_text("{}")
            (folder / ("__grp__" + name + ".json")).write_text("{}")
        self.send_response(200 if self.path in ("/health",) or "/compile/" in self.path else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Serve).serve_forever()
"""


RECORDED = Path(__file__).parents[2] / "fixtures/engines/sglang/h100-0.5.12"
"""A folder of the Triton cache of SGLang 0.5.12's hybrid server on an H100, as listed after a sitting
(triton_cache_entry.txt; benchmarks/data/h100-sglang-2026-12-06b/triton-kernels.txt counts them all)."""


def layout(folder: Path, key: str, kernel: str) -> None:
    """The files Triton left for one compiled kernel (the recorded folder's, renamed to `kernel`)."""
    entry = folder / key
    entry.mkdir(parents=True)
    for name in (RECORDED / "triton_cache_entry.txt").read_text().split():
        (entry / name.replace("_causal_conv1d_fwd_kernel", kernel)).write_text("")


def test_folders_added_since_the_mark_name_their_kernels(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path / "cache")
    assert cache.entries() == frozenset()  # no cache yet: nothing compiled, nothing to read
    layout(
        cache.folder, "6QWJ4CWRPZ4C5MO3XWMYJXOEKRZZXLTABQ7V2NIMD3SPLVY5ACOA", "l2norm_fwd_kernel"
    )
    before = cache.entries()
    assert cache.compiled_since(before) == ()
    layout(
        cache.folder, "QN5ZWJ3M3Q2L2ZRBGW4XDHZ5TZSXLDU7JBFWJ5B6E3NHCJVOW7AQ", "l2norm_fwd_kernel"
    )
    (cache.folder / "K7FZ2TYCN5M5NJ5T3C55ORZQWOYGCPAQJHH7H7JBZWRBE6ZYGGPA").mkdir()  # files to come
    found = cache.compiled_since(before)
    assert found == (
        "Triton compiled a kernel or its launcher during the window (kernel cache K7FZ2TYCN5M5)",
        "Triton compiled l2norm_fwd_kernel during the window (kernel cache QN5ZWJ3M3Q2L)",
    )


def test_a_hostile_file_name_is_not_repeated() -> None:
    cache = KernelCache(Path("/nonexistent"))
    assert "\x1b" not in cache.describe("\x1b]0;title\x07X")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"TRITON_CACHE_DIR": "/c", "TRITON_HOME": "/h", "HOME": "/u"}, "/c"),
        ({"TRITON_HOME": "/h", "HOME": "/u"}, "/h/.triton/cache"),
        ({"HOME": "/u"}, "/u/.triton/cache"),
    ],
)
def test_the_cache_is_where_triton_looks(env: dict[str, str], expected: str) -> None:
    assert KernelCache.of_server(env).folder == Path(expected)


def test_a_window_of_a_started_sglang_server_shows_what_it_compiled(
    make_spec: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub = tmp_path / "server"
    stub.write_text(f"#!{sys.executable}\n{STUB}")
    stub.chmod(0o755)
    triton = tmp_path / "triton"
    triton.mkdir()
    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    spec = make_spec(
        "runtime=sglang",
        f"runtime.executable={stub}",
        f"runtime.env={{TRITON_CACHE_DIR: {triton}}}",
        "runtime.start_timeout_s=60",
        "model=tiny-hf",
    )
    runtime = runtime_for("sglang")(spec, tmp_path)
    try:
        runtime.start()
        mark = runtime.log_mark()
        assert runtime.compiles_since(mark) == ()  # a clean window
        httpx.get(f"{runtime.base_url}/compile/l2norm_fwd_kernel")
        (compiled,) = runtime.compiles_since(mark)
        assert compiled.startswith("Triton compiled l2norm_fwd_kernel during the window")
        assert runtime.compiles_since(runtime.log_mark()) == ()  # the next window starts clean
    finally:
        runtime.stop()


def test_an_engine_that_says_nothing_of_its_kernels_is_not_watched(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    # a server specexp did not start (runtime.url) cannot be watched: its windows stay unknown
    runtime = runtime_for("sglang")(
        make_spec("runtime=sglang", "runtime.url=http://127.0.0.1:9"), tmp_path
    )
    assert runtime.log_mark() is None and runtime.compiles_since(None) is None
