"""Where llama-server's time goes when several prompts arrive together, on an H200.

    python benchmarks/gpu/llamacpp_trace.py --src llama.cpp.tar.xz --work /root/specexp-gpu --out OUT   # on the device
    python benchmarks/gpu/llamacpp_trace.py --report OUT                                                  # here

The TTFT of concurrent requests is the simulator's weakest llama.cpp figure (issue 14): prompts that
arrive together are prefilled in shared batches, and that costs llama-server more than the same
number of tokens of one prompt. This run separates the parts of that cost:

- ``llama-batched-bench`` prefills B prompts of 519 tokens at once (B = 1 ... 32), with one KV stream
  per sequence (what llama-server has with ``-np``) and with one unified stream (``-kvu``), and one
  prompt of the same total length: the cost of a batch by its number of sequences, without HTTP or
  the server's scheduling;
- specexp itself against llama-server, decode at concurrency 1 ... 32 (512-token prompts, 32 tokens
  out, three repeats), as runtime=llamacpp starts it and again with ``--kv-unified``, the server's log
  with timestamps: each request's TTFT against its slot's prompt_ms.

Everything comes back in OUT/trace.tar.gz; ``--report`` turns it into benchmarks/results/llamacpp-trace.md
and benchmarks/data/h200-llamacpp-trace.jsonl (benchmarks/gpu/trace_report.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.gpu import llamacpp_h200 as h200

PROMPT = 519  # the decode cells' prompt length (512 requested, with the template's tokens)
SEQS = (1, 2, 3, 4, 8, 16, 32)
SINGLE = (
    512,
    1038,
    1557,
    2076,
    4152,
    8304,
    16608,
)  # one prompt of B x 519 tokens, B = 1, 2, 3, 4, 8, 16, 32
DECODE = [
    "runtime=llamacpp",
    "model=qwen3-8b",
    "quantization=bf16",
    "hardware=h200",
    "drafter=none",
    "workload=concurrency",
    "workload.concurrency=[1,2,4,8,16,32]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=32",
    "workload.repeats=3",
    "runtime.max_model_len=2048",
    "runtime.start_timeout_s=300",
]


def batched_bench(
    tool: Path, model: Path, work: Path, out: Path, name: str, args: list[str]
) -> None:
    argv = [
        str(tool),
        "-m",
        str(model),
        "-c",
        "70000",
        "-b",
        "2048",
        "-ub",
        "512",
        "-ngl",
        "99",
        "--output-format",
        "jsonl",
        *args,
    ]
    h200.log(out, "bench: " + " ".join(argv[3:]))
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=240)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    (work / "bench").mkdir(parents=True, exist_ok=True)
    (work / "bench" / f"bench-{name}.jsonl").write_text("\n".join(rows) + "\n")
    h200.log(
        out,
        f"  rc={proc.returncode}, {len(rows)} rows in {time.monotonic() - started:.0f} s"
        + ("" if proc.returncode == 0 else " | " + " | ".join(proc.stderr.splitlines()[-5:])),
    )


def pack(work: Path, out: Path) -> None:
    """The bench rows and the sweeps' records into OUT/trace.tar.gz (OUT brings back 8 files at
    most, and the build's llama-server parts take three)."""
    with tarfile.open(out / "trace.tar.gz", "w:gz") as tar:
        for path in sorted((work / "bench").glob("bench-*.jsonl")):
            tar.add(path, arcname=f"trace/{path.name}")
        for path in sorted((work / "sweeps").rglob("*")):
            if path.is_file() and path.name in (
                "result.json",
                "requests.jsonl",
                "server.log",
                "results.jsonl",
            ):
                tar.add(path, arcname=f"trace/{path.relative_to(work)}")


def device(args: argparse.Namespace) -> None:
    out, work = args.out, args.work
    models: dict[str, Path] = {}
    writer = threading.Thread(target=lambda: models.update(h200.write_models(work, out, {"bf16"})))
    writer.start()
    binary = h200.build(work, args.src, out, None, also=("llama-batched-bench",))
    writer.join()
    model = models["qwen3-8b-bf16"]
    tool = binary.parent / "llama-batched-bench"
    npl = ",".join(map(str, SEQS))
    batched_bench(
        tool,
        model,
        work,
        out,
        "streams",
        ["-npp", str(PROMPT), "-ntg", "4", "-npl", npl, "-no-kvu"],
    )
    batched_bench(
        tool, model, work, out, "unified", ["-npp", str(PROMPT), "-ntg", "4", "-npl", npl, "-kvu"]
    )
    batched_bench(
        tool,
        model,
        work,
        out,
        "single",
        ["-npp", ",".join(map(str, SINGLE)), "-ntg", "1", "-npl", "1"],
    )
    pack(work, out)
    paths = [f"runtime.executable={binary}", f"runtime.model_path={model}"]
    for name, extra in (
        ("streams", "[--log-timestamps,--log-prefix]"),
        ("unified", "[--log-timestamps,--log-prefix,--kv-unified]"),
    ):
        left = args.deadline_s - (time.monotonic() - h200.T0)
        if left < 60:
            h200.log(out, f"sweep {name}: not started ({left:.0f} s left)")
            continue
        h200.specexp(
            work / "sweeps" / name, [*DECODE, *paths, f"runtime.extra_args={extra}"], left - 10, out
        )
        pack(work, out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--src", type=Path, help="tarball of the sdist's vendor/llama.cpp (llamacpp_h200.py source)"
    )
    parser.add_argument("--work", type=Path, default=Path("/root/specexp-gpu"))
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    parser.add_argument("--deadline-s", type=float, default=560.0)
    parser.add_argument(
        "--report", type=Path, help="a device call's OUT folder: write the report here"
    )
    args = parser.parse_args()
    if args.report:
        from benchmarks.gpu import trace_report

        for path in trace_report.write(args.report / "trace.tar.gz", args.report / "log.txt"):
            print(path)
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    device(args)
    print(json.dumps({"out": sorted(p.name for p in args.out.iterdir())}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
