"""When a burst's first request gets its first token on SGLang, with and without a drafter.

    .venv/bin/python benchmarks/sglang_first_wave.py

SGLang runs a prefill batch alone (docs/engines.md 2.8): the first request of a burst of 8 or 16
512-token prompts is prefilled on its own, and the others arrive in later waves. Without a drafter its
first token leaves after its own prefill (28-47 ms on the H200). This counts, for every committed
SGLang sitting's dense-shape `concurrency` windows of 8 and 16 streams, the windows whose first request
waited past HELD_MS for its first token, as if held back to the next wave's end. It reads each window's
request log (requests.jsonl) and writes benchmarks/results/sglang_first_wave.md. With the draft model,
the first timed window at 8 streams was held in each of its four jobs, after a warm-up window of the same
shape; the median over a point's windows, which the calibration reads, leaves one such window out.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.gpu.sglang_report import sitting_dirs  # noqa: E402
from specexp.measure.request_log import by_window, read_requests  # noqa: E402
from specexp.spec.vocabulary import C, M  # noqa: E402

HELD_MS = 90.0
"""Past twice the slowest lone first prefill of a burst without a drafter (47 ms)."""
STREAMS = (8, 16)
PROMPT = 512
"""The prompts' length asked for: the drafters' bursts, not the bursts of short prompts."""


def windows(job: Path) -> dict[tuple[int, int], list[float]]:
    """Each timed window's first-token times (ms) by (streams, its place in the job), from the job's
    request log."""
    found: dict[tuple[int, int], list[float]] = {}
    for place, reqs in enumerate(by_window(read_requests(job))):
        streams = int(reqs[0].get(C.concurrency) or 0)
        if reqs[0].get("warmup") or streams not in STREAMS:
            continue
        found[(streams, place)] = [
            float(r[M.ttft_s]) * 1e3 for r in reqs if r.get(M.ttft_s) is not None
        ]
    return found


def main() -> None:
    counts: dict[tuple[str, str, str, int], list[int]] = collections.defaultdict(lambda: [0, 0])
    firsts: dict[tuple[str, str, str, int], list[str]] = collections.defaultdict(list)
    for sitting in sitting_dirs():
        for result in sorted((sitting / "sweeps" / "h200_sglang_dense").glob("*/result.json")):
            config = json.loads(result.read_text())["provenance"]["config"]
            if (
                config["workload"]["name"] != "concurrency"
                or config["workload"]["prompt_tokens"] != PROMPT
                or config["runtime"].get("env")  # SGLang's scheduling changed: sglang_waves.py
                or not (result.parent / "requests.jsonl").is_file()
            ):
                continue
            drafter = config["drafter"]["name"]
            key_k = "–" if drafter == "none" else str(config["k"])
            card = config["hardware"]["name"]
            order: dict[int, int] = collections.Counter()
            for (streams, _), ttfts in sorted(windows(result.parent).items()):
                first, order[streams] = min(ttfts), order[streams] + 1
                key = (card, drafter, key_k, streams)
                counts[key][0] += first > HELD_MS
                counts[key][1] += 1
                firsts[key].append(
                    f"{first:.0f}" + (f" (#{order[streams]})" if first > HELD_MS else "")
                )
    lines = [
        "# A burst's first token on SGLang, with and without a drafter",
        "",
        "Written by `benchmarks/sglang_first_wave.py` from every SGLang sitting's `concurrency` windows "
        "(SGLang 0.5.12 with CUDA, the dense Qwen3-8B shape in BF16 served without weights, bursts of 512-token "
        "prompts with 128 tokens out; benchmarks/gpu/sglang_report.py SITTINGS). The figure is `ttft_s` "
        "(docs/vocabulary.md) of the window's earliest first token. A window counts as held where "
        f"its first request's first token came after {HELD_MS:.0f} ms; (#n) is that window's place among its "
        "job's timed windows at that concurrency, each job's in the order they ran.",
        "",
        "| card | drafter | k | streams | windows held | the first request's first token (ms) |",
        "|---|---|---|---:|---:|---|",
    ]
    for key in sorted(counts):
        held, seen = counts[key]
        spread = ", ".join(firsts[key])
        lines.append(f"| {' | '.join(map(str, key))} | {held} of {seen} | {spread} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (REPO / "benchmarks/results/sglang_first_wave.md").write_text(text)


if __name__ == "__main__":
    main()
