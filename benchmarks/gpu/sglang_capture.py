"""What a real SGLang says, kept as it came: the fixtures specexp's SGLang adapter is tested on
(tests/fixtures/engines/sglang/h200-0.5.12/).

Run on the device by `sglang_h200.py run` after the sweeps (with SITE on PYTHONPATH): it starts one
server of the dense shape with EAGLE-3 at 3/1/4 (dummy weights, the folders specexp writes) and saves

- `server_info.json` (`GET /server_info`), `metrics_before.txt` and `metrics_after.txt` (`/metrics`
  around the requests below);
- `generate_stream.txt`: the raw bytes of a streamed native `/generate` (64 tokens, ignore_eos);
- `chat_stream.txt`: a streamed `/v1/chat/completions` with per-chunk usage and
  `return_spec_tokens_details` (what 0.5.12's OpenAI endpoint gives back for them);
- `completions_stream.txt`: a streamed `/v1/completions` with usage;
- `tokenize.json`, `detokenize.json`, `flush_cache.txt`;
- `server.log` (the start, and the requests);

then a start SGLang refuses: the hybrid with MTP and the prefix cache under its default
`--mamba-scheduler-strategy` (`refused_start.log`, its last lines).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

PORT = 30777
BASE = f"http://127.0.0.1:{PORT}"
DEVICE_FLAGS = ["--sampling-backend", "pytorch", "--cuda-graph-max-bs", "32"]


def folders() -> tuple[Path, Path, Path]:
    """The dense target, its EAGLE-3 head and the hybrid, as specexp writes them."""
    from specexp.models import hf_config
    from specexp.run.compose import build_spec
    from specexp.spec.cache import cache_dir

    dense = build_spec(["model=qwen3-8b", "drafter=eagle3", "k=3", "hardware=h200"])
    hybrid = build_spec(["model=qwen3.8-27b", "hardware=h200"])
    root = cache_dir() / "models"
    return (
        hf_config.model_folder(root, dense.model),
        hf_config.eagle3_folder(root, dense.model, dense.drafter),
        hf_config.model_folder(root, hybrid.model),
    )


def http(
    method: str, path: str, body: dict | None = None, timeout: float = 60
) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        BASE + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except OSError as err:
        return 0, str(err).encode()


def serve(argv: list[str], log: Path, ready_s: float) -> subprocess.Popen | None:
    """Start `argv`; the process once /health answers 200, None when it exits first or times out."""
    with log.open("w") as sink:
        proc = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    t0 = time.monotonic()
    while time.monotonic() - t0 < ready_s:
        if proc.poll() is not None:
            return None
        if http("GET", "/health", timeout=5)[0] == 200:
            return proc
        time.sleep(2)
    stop(proc)
    return None


def stop(proc: subprocess.Popen) -> None:
    """SIGKILL to the group: SGLang ignores SIGTERM for over 30 s (sglang-on-h200 notes)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def capture(out: Path, deadline_s: float) -> None:
    t0 = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    dense, head, hybrid = folders()
    base = [
        sys.executable,
        "-m",
        "sglang.launch_server",
        "--host",
        "127.0.0.1",
        "--port",
        str(PORT),
    ]
    argv = [
        *base,
        "--model-path", str(dense),
        "--load-format", "dummy",
        "--served-model-name", "qwen3-8b",
        "--enable-metrics",
        "--enable-cache-report",
        "--mem-fraction-static", "0.85",
        "--speculative-algorithm", "EAGLE3",
        "--speculative-draft-model-path", str(head),
        "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
        *DEVICE_FLAGS,
    ]  # fmt: skip
    proc = serve(argv, out / "server.log", max(deadline_s - 120, 60))
    print(f"capture: server up={proc is not None} after {time.monotonic() - t0:.0f} s", flush=True)
    if proc is not None:
        try:
            (out / "server_info.json").write_bytes(http("GET", "/server_info")[1])
            (out / "metrics_before.txt").write_bytes(http("GET", "/metrics")[1])
            prompt = "Count from one to one hundred in words, separated by commas: one, two,"
            sampling = {"max_new_tokens": 64, "temperature": 0.0, "ignore_eos": True}
            status, raw = http(
                "POST", "/generate", {"text": prompt, "sampling_params": sampling, "stream": True}
            )
            (out / "generate_stream.txt").write_bytes(raw)
            usage = {"include_usage": True, "continuous_usage_stats": True}
            chat = {
                "model": "qwen3-8b",
                "messages": [{"role": "user", "content": prompt}],
                "max_tokens": 64,
                "temperature": 0.0,
                "ignore_eos": True,
                "stream": True,
                "stream_options": usage,
                "return_spec_tokens_details": True,
                "return_cached_tokens_details": True,
            }
            (out / "chat_stream.txt").write_bytes(http("POST", "/v1/chat/completions", chat)[1])
            completion = {
                "model": "qwen3-8b",
                "prompt": prompt,
                "max_tokens": 64,
                "temperature": 0.0,
                "ignore_eos": True,
                "stream": True,
                "stream_options": usage,
            }
            (out / "completions_stream.txt").write_bytes(
                http("POST", "/v1/completions", completion)[1]
            )
            (out / "metrics_after.txt").write_bytes(http("GET", "/metrics")[1])
            tokens = http(
                "POST",
                "/tokenize",
                {"model": "qwen3-8b", "prompt": prompt, "add_special_tokens": False},
            )[1]
            (out / "tokenize.json").write_bytes(tokens)
            ids = json.loads(tokens).get("tokens", [])[:8]
            (out / "detokenize.json").write_bytes(
                http("POST", "/detokenize", {"model": "qwen3-8b", "tokens": ids})[1]
            )
            status, text = http("POST", "/flush_cache")
            (out / "flush_cache.txt").write_bytes(f"HTTP {status}\n".encode() + text)
        finally:
            stop(proc)
    left = deadline_s - (time.monotonic() - t0)
    if left < 90:
        print(f"capture: no refused start ({left:.0f} s left)", flush=True)
        return
    refused = [
        *base,
        "--model-path", str(hybrid),
        "--load-format", "dummy",
        "--mem-fraction-static", "0.85",
        "--speculative-algorithm", "NEXTN",
        "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
        *DEVICE_FLAGS,
    ]  # fmt: skip
    proc = serve(refused, out / "refused_start.full.log", left - 30)
    if proc is not None:
        stop(proc)
        print("capture: the refused start served", flush=True)
    lines = (out / "refused_start.full.log").read_text(errors="replace").splitlines()
    (out / "refused_start.log").write_text("\n".join(lines[-60:]) + "\n")
    (out / "refused_start.full.log").unlink()
    print(f"capture: done after {time.monotonic() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    capture(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 400.0)
