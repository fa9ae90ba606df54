"""SGLang with CUDA on an H200, driven by specexp (`runtime=sglang hardware=h200`).

On the device (one lease; the pieces of `sglang_stage.py pack` travel one a call, then):

    python3 benchmarks/gpu/sglang_h200.py carry --piece .gpu-stage/sglang/piece-0     # each piece, a call each
    python3 benchmarks/gpu/sglang_h200.py install start --out $OUT                    # unpack, start the sweeps
    python3 benchmarks/gpu/sglang_h200.py wait --for 540 --out $OUT                   # later calls: progress, records

Here, on what came back:

    .venv/bin/python benchmarks/gpu/sglang_h200.py report     # every committed sitting (SITTINGS)

SGLang 0.5.12 is unpacked into a folder of its own (SITE) that goes first on PYTHONPATH for specexp and
for every server it starts (its packages clash with vLLM's: benchmarks/results/sglang-h200-size.md).
The sweeps are `experiments/h200_sglang_dense.yaml` and `h200_sglang_hybrid.yaml` with
`runtime=sglang runtime.load_format=dummy`: SGLang serves every model without weights from the
config-only folders specexp writes (specexp.models.hf_config), the EAGLE-3 head and the 2-layer draft
model too. Completions go to SGLang's native `/generate`, whose `meta_info` carries each request's
speculative counts (`workload.endpoint=completions`; specexp.runtimes.sglang.native).

Flags of this device, not of specexp's SGLang driver (FLAGS): `--sampling-backend pytorch` (FlashInfer's
sampler would compile with nvcc at first use, minutes of a lease) and `--cuda-graph-max-bs 32` (graphs
for the batch sizes measured, 32 streams at most: a shorter start). On the hybrid,
`--mamba-scheduler-strategy extra_buffer` for every cell: SGLang refuses speculative decoding with the
prefix cache under its default strategy, so a like-for-like baseline of MTP uses the same strategy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.gpu.sitting import Sitting  # noqa: E402

SITE = Path("/tmp/sglang-site")
SITTING = Sitting(
    work=Path(os.environ.get("SPECEXP_GPU_WORK", "/tmp/specexp-sglang-gpu")),
    pieces=Path("/tmp/specexp-sglang"),
    script=Path(__file__).resolve(),
)
DEVICE_FLAGS = "--sampling-backend,pytorch,--cuda-graph-max-bs,32"
FLAGS = {
    "h200_sglang_dense": [f"runtime.extra_args=[{DEVICE_FLAGS}]"],
    "h200_sglang_hybrid": [
        f"runtime.extra_args=[{DEVICE_FLAGS},--mamba-scheduler-strategy,extra_buffer]"
    ],
}
"""Each experiment and the flags its servers need on this device (see the module docstring)."""
MEASURED = [
    "runtime=sglang",
    "~runtime.engine",  # the experiments' simulator setting (runtime.engine: sglang)
    "runtime.load_format=dummy",
    "runtime.start_timeout_s=900",
    "workload.endpoint=completions",
]
DECODE = (
    "workload:concurrency,workload.concurrency:'[1,2,4,8,16,32]',workload.prompt_tokens:'512',"
    "workload.output_tokens:'128',workload.repeats:'5'"
)


def grid(*cells: str) -> str:
    """A `hydra.sweeper.grid` override of these cells (each `key:value,...`)."""
    return "hydra.sweeper.grid=[" + ",".join("{" + c + "}" for c in cells) + "]"


CAPTURE = "capture"
"""A plan entry that runs sglang_capture.py (the real server's outputs, kept as fixtures) into
work/capture/."""
STUDIES = [
    ("h200_sglang_dense", []),
    ("h200_sglang_hybrid", []),
    (CAPTURE, []),
    ("h200_sglang_hybrid", [grid(f"{DECODE},drafter:mtp,k:'1,7'"), "baseline=false"]),
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'1,7'"), "baseline=false"]),
]
"""The experiments' cells (each server configuration once: the dense shape without a drafter, with
EAGLE-3 and the draft model at the A/B's 3/1/4; the hybrid without a drafter and with MTP at 3/1/4),
the real server's outputs, then the k sweep (1 and 7) of MTP and of EAGLE-3, a server each."""
PREFIX_SENDS = (
    "workload:prefix_cache,workload.prompt_lengths:'[3700,8000,16000]',"
    "workload.cache:'[cold,warm,warm]'"
)
EXTENDED = (
    "workload:agentic_sessions,workload.concurrency:'[1]',workload.prompt_tokens:'8000',"
    "workload.output_tokens:'16',workload.session.turns:'3',workload.session.turn_tokens:'64',"
    "workload.session.think_time_s:'0'"
)
SECOND = [
    (
        "h200_sglang_hybrid",
        [
            grid(
                f"{DECODE},drafter:mtp,k:'3'",
                f"{PREFIX_SENDS},drafter:mtp,k:'3'",
                f"{PREFIX_SENDS},drafter:none",
                f"{EXTENDED},drafter:none",
            ),
            "baseline=false",
        ],
    ),
    ("h200_sglang_hybrid", [grid(f"{DECODE},drafter:mtp,k:'1,7'"), "baseline=false"]),
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'1,7'"), "baseline=false"]),
]
"""What the first sitting (2026-12-04) left: MTP at the A/B's 3/1/4 on the hybrid with its warm prefixes;
the hybrid's prefix sent three times (what a second and a third send find, with and without MTP) and a
session whose every turn extends the last prompt; then the k sweep (1 and 7) of MTP and of EAGLE-3."""
THIRD = [
    ("h200_sglang_hybrid", [grid(f"{DECODE},drafter:mtp,k:'7'"), "baseline=false"]),
    ("h200_sglang_hybrid", [grid(f"{DECODE},drafter:mtp,k:'1'"), "baseline=false"]),
]
"""What the second sitting lost with its machine: MTP at k = 7, then at k = 1, on the hybrid."""
FIRST_TOKEN = (
    "workload:concurrency,workload.concurrency:'[1]',workload.prompt_tokens:'512,1024',"
    "workload.output_tokens:'1,128',workload.repeats:'3',drafter:none"
)
"""One stream's first token at 512 and 1,024 prompt tokens with one token out and with 128: on the hybrid
a 512-token prompt with 128 out took 109 ms to its first token where a 1,024-token prefill with one out
took 101 ms, and a warm hit of ~120 new tokens 110-160 ms."""
FIFTH = [
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'1,7'"), "baseline=false"]),
    (
        "h200_sglang_dense",
        [
            grid(
                f"{PREFIX_SENDS},drafter:eagle3,k:'3'",
                f"{PREFIX_SENDS},drafter:none",
                f"{EXTENDED},drafter:none",
            ),
            "baseline=false",
        ],
    ),
    (
        "h200_sglang_dense",
        [
            grid(f"{DECODE},drafter:draft_model,draft_model:qwen3-8b-2layer,k:'1,7'"),
            "baseline=false",
        ],
    ),
]
"""What the fifth sitting (2026-12-05, second) measured: EAGLE-3 at k = 1 and 7 on the dense shape; its
prefix sent three times with EAGLE-3 at 3/1/4 and without a drafter, and a session whose every turn
extends the last prompt; the draft model's k sweep (1 and 7)."""
REST = [("h200_sglang_hybrid", [grid(FIRST_TOKEN, f"{EXTENDED},drafter:none"), "baseline=false"])]
"""What no sitting has brought back: the hybrid's first token by prompt and tokens out (the fifth sitting
reached its deadline before it), and its extending session warmed at both of its shapes (the second
sitting's was warmed with one 108-token prompt: its third turn, 336 new tokens onto 8,640 cached, took
224 ms where warm hits of ~120 new tokens took 110-136 ms). One server, about 5 minutes."""
PREFILL = (
    "workload:prefill_sweep,workload.prompt_lengths:'[1024,2048,4096,8192,16384]',drafter:none"
)
BASELINE = [
    (
        "h200_sglang_dense",
        [grid(f"{DECODE},drafter:none", PREFILL, f"{PREFIX_SENDS},drafter:none"), "baseline=false"],
    ),
    (
        "h200_sglang_hybrid",
        [
            grid(
                FIRST_TOKEN,
                f"{EXTENDED},drafter:none",
                f"{DECODE},drafter:none",
                f"{PREFIX_SENDS},drafter:none",
            ),
            "baseline=false",
        ],
    ),
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'3'"), "baseline=false"]),
]
"""Both shapes without a drafter on a card not measured before (the sitting picks its hardware profile:
Sitting.hardware): the dense shape's decode at 1-32 streams, prefill 1k-16k and its prefix sent three
times; the hybrid's first token by prompt and tokens out, its extending session, decode and prefix sends
(REST's cells among them); then EAGLE-3 at 3/1/4 on the dense shape. Three servers, about 15 minutes. On
an H100 every figure is held out: the `sglang` profile was fitted on the H200 alone."""
TWO_PREFIXES = (
    "workload:prefix_cache,workload.prompt_lengths:'[3700,8000]',workload.cache:'[cold,warm,warm]'"
)
KERNELS = [
    (
        "h200_sglang_hybrid",
        [
            grid(
                f"{TWO_PREFIXES},drafter:none",
                f"{EXTENDED},drafter:none,workload.repeats:'2'",
                "workload:concurrency,workload.concurrency:'[1,2,4,8]',workload.prompt_tokens:'512',"
                "workload.output_tokens:'128',workload.repeats:'3',drafter:none",
            ),
            "baseline=false",
        ],
    ),
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'3'"), "baseline=false"]),
]
"""Whether the hybrid's costly first hits are kernel compiles, read from the server's Triton cache
(specexp.runtimes.http.kernel_cache): its prefix sent three times, warmed by three sends of its own;
two extending sessions, whose warm turns each prefill a number of tokens not seen before; bursts of
1-8. Then EAGLE-3 at 3/1/4 on the dense shape. Two servers, about 10 minutes."""
DEEP = [
    ("h200_sglang_dense", [grid(f"{DECODE},drafter:eagle3,k:'7'"), "baseline=false"]),
    (
        "h200_sglang_dense",
        [
            grid(f"{DECODE},drafter:draft_model,draft_model:qwen3-8b-2layer,k:'3'"),
            "baseline=false",
        ],
    ),
    ("h200_sglang_dense", [grid(PREFILL, f"{DECODE},drafter:none"), "baseline=false"]),
]
"""The cells outside the targets, measured again: EAGLE-3 at k = 7 on the dense shape at 1-32 streams (on
the H200 its burst of two reached its first tokens in 86 ms against 59 simulated, and 46 at k = 1); the
draft model at k = 3 (its per-stream decode at 32 streams +22 % on the H200, its aggregate within 5 %);
the dense shape's prefill 1k-16k without a drafter (the 1k cell -15 % on the H200, -21 % on the H100)
with its decode. Three servers, about 15 minutes (the sitting of 2026-12-06), in that order."""
SHORT_BURSTS = (
    "workload:concurrency,workload.concurrency:'[1,2,4,8]',workload.prompt_tokens:'512',"
    "workload.output_tokens:'128',workload.repeats:'5'"
)
NO_CONSECUTIVE_OVERLAP = "runtime.env={SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP:'1'}"
HOLD = [
    ("h200_sglang_dense", [grid(f"{SHORT_BURSTS},drafter:eagle3,k:'7'"), "baseline=false"]),
    (
        "h200_sglang_dense",
        [grid(f"{SHORT_BURSTS},drafter:eagle3,k:'7'"), "baseline=false", NO_CONSECUTIVE_OVERLAP],
    ),
    (
        "h200_sglang_dense",
        [grid(f"{SHORT_BURSTS},drafter:none"), "baseline=false", NO_CONSECUTIVE_OVERLAP],
    ),
]
"""What holds a burst's first token (docs/engines.md 2.8, 2.9): EAGLE-3 at k = 7 on the dense shape in
bursts of 1-8 (its burst of two reached its first tokens in 82-86 ms on the H200, against 45-52 at k = 1
and 3), then the same with SGLang's overlap of consecutive prefill batches turned off
(SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP: the first batch's results are processed before the second is
launched), then the drafter-less bursts so. Three servers, about 10 minutes."""
HOLD_K = [
    ("h200_sglang_dense", [grid(f"{SHORT_BURSTS},drafter:eagle3,k:'1,3'"), "baseline=false"]),
    ("h200_sglang_dense", [grid(f"{SHORT_BURSTS},drafter:none"), "baseline=false"]),
]
"""HOLD's default servers at other k, on the same machine: EAGLE-3 at k = 1 and 3 in bursts of 1-8 (a
server each), then the drafter-less bursts, to set each k's wait for the next batch's launch beside
k = 7's and beside the graphed prefill's. Three servers, about 10 minutes."""
K_SWEEP = [
    ("h200_sglang_dense", [grid(f"{SHORT_BURSTS},drafter:eagle3,k:'1,3,7'"), "baseline=false"]),
    ("h200_sglang_dense", [grid(f"{SHORT_BURSTS},drafter:none"), "baseline=false"]),
]
"""HOLD_K with k = 7 beside k = 1 and 3 on one machine: EAGLE-3 in bursts of 1-8 at each k (a server
each), then the drafter-less bursts. On the H200 the first request of a burst of two got its first
token at 80 ms at k = 7 against 42 at k = 1 in one sitting (2026-12-05b; the mean first token 86 against
46); HOLD_K's machine ran SGLang's Python too slowly to tell k from the host
(benchmarks/data/h100-sglang-2026-12-06d/). Four servers, about 10 minutes (the sitting of 2026-12-06e:
k did not move it there)."""
PLANS = {
    "k-sweep": K_SWEEP,
    "hold": HOLD,
    "hold-k": HOLD_K,
    "deep": DEEP,
    "kernels": KERNELS,
    "studies": STUDIES,
    "second": SECOND,
    "third": THIRD,
    "fifth": FIFTH,
    "rest": REST,
    "baseline": BASELINE,
}
DEVICE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "PYTHONUNBUFFERED": "1",
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
"""Offline, and NVLink multicast off (the lent machines' rule)."""


def device_env() -> dict[str, str]:
    """The environment of specexp and of the servers it starts: SITE first on PYTHONPATH, and the
    carried libnuma where the device has none."""
    env = {**os.environ, **DEVICE_ENV, "PYTHONPATH": str(SITE)}
    numa = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False)
    if "libnuma.so.1 " not in numa.stdout:
        env["LD_LIBRARY_PATH"] = ":".join(
            p for p in (str(SITE / "_syslibs"), os.environ.get("LD_LIBRARY_PATH")) if p
        )
    return env


def install(out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/gpu/sglang_stage.py"),
            "install",
            "--pieces",
            str(SITTING.pieces),
        ],
        check=True,
    )
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t = time.time(); import sglang, sgl_kernel, flashinfer, transformers; "
            "import sglang.srt.entrypoints.http_server; from sgl_kernel import flash_ops; "
            "import hydra, specexp; "
            "print('sglang', sglang.__version__, 'sgl_kernel', sgl_kernel.__version__, 'transformers', "
            "transformers.__version__, 'imports %.0f s' % (time.time() - t))",
        ],
        capture_output=True,
        text=True,
        env=device_env(),
        cwd=REPO,
    )
    SITTING.log(f"install: {(check.stdout + check.stderr).strip()[-800:]}", out)
    if check.returncode != 0:
        raise SystemExit(check.returncode)


def run(deadline_s: float, extra: list[str], sweep: list[str], plan: str) -> int:
    """Every sweep of the plan in turn (or `sweep`, one multirun of those overrides); each stops
    starting jobs at the deadline."""
    t0 = time.monotonic()
    SITTING.host_info()
    env = {**device_env(), "SPECEXP_CACHE": str(SITTING.work / "cache")}
    runs: list[tuple[str, list[str]]] = [("sweep", sweep)] if sweep else PLANS[plan]
    experiments = {p.stem for p in (REPO / "experiments").glob("*.yaml")}
    for name, only in runs:
        left = deadline_s - (time.monotonic() - t0)
        if left < 120:
            SITTING.log(f"run: {name} {only} not started ({left:.0f} s left)")
            continue
        if name == CAPTURE:
            argv = [sys.executable, str(REPO / "benchmarks/gpu/sglang_capture.py")]
            with (SITTING.work / "capture.raw.txt").open("a") as console:
                rc = subprocess.run(
                    [*argv, str(SITTING.work / "capture"), str(min(left, 420))],
                    cwd=REPO,
                    env=env,
                    stdout=console,
                    stderr=subprocess.STDOUT,
                    check=False,
                ).returncode
            SITTING.log(f"run: capture rc={rc} after {time.monotonic() - t0:.0f} s")
            continue
        given = {e.split("=", 1)[0] for e in [*extra, *only]}
        base = [*MEASURED, f"runtime.executable={sys.executable}", *FLAGS.get(name, [])]
        overrides = [*(o for o in base if o.split("=", 1)[0] not in given), *only, *extra]
        rc = SITTING.sweep(name, overrides, env, left, name in experiments)
        SITTING.log(f"run: {name} rc={rc} after {time.monotonic() - t0:.0f} s")
    SITTING.done(time.monotonic() - t0)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "stages", nargs="+", choices=["carry", "install", "start", "run", "wait", "pack", "report"]
    )
    parser.add_argument("--piece", type=Path, action="append", default=[])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    parser.add_argument("--deadline-s", type=float, default=1080.0)
    parser.add_argument("--for", dest="wait_s", type=float, default=540.0)
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--sweep", action="append", default=[])
    parser.add_argument("--plan", choices=sorted(PLANS), default="studies")
    args = parser.parse_args()
    start_args = [
        f"--deadline-s={args.deadline_s}",
        f"--plan={args.plan}",
        *[f"--extra={e}" for e in args.extra],
        *[f"--sweep={e}" for e in args.sweep],
    ]
    for stage in args.stages:
        if SITTING.common_stage(stage, args, start_args):
            continue
        if stage == "install":
            install(args.out)
        elif stage == "run":
            return run(args.deadline_s, args.extra, args.sweep, args.plan)
        elif stage == "report":
            from benchmarks.gpu import sglang_report

            for path in sglang_report.write():
                SITTING.log(f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
