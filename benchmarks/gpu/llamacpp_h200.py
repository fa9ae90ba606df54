"""llama-server with CUDA on an H200, measured by specexp, beside the simulator on the same cells.

    python benchmarks/gpu/llamacpp_h200.py all --src llama.cpp.tar.xz --work /root/specexp-gpu --out OUT
    python benchmarks/gpu/llamacpp_h200.py sim report --records OUT/records.tar.gz   # here, no GPU

Stages (each skips what is already done under --work, so a second call resumes the first):

- ``source`` (here, once): ``--sdist llama_cpp_python-0.3.36.tar.gz --src llama.cpp.tar.xz`` packs the
  sdist's vendor/llama.cpp without what a CUDA server build does not read (76 MB -> 4 MB).

- ``build``: llama-server alone, with CUDA for sm_90 (GGML_CUDA=ON, CMAKE_CUDA_ARCHITECTURES=90,
  native off, -j of every core), from the llama.cpp sources vendored in the llama-cpp-python sdist
  (scripts/build-llama-server.sh's sources); the commit is passed to CMake, so build_info names it.
- ``models``: the Qwen3-8B shape in BF16 and a Qwen3-0.6B-shaped draft with the same vocabulary,
  random weights (specexp.models.shaped_gguf), written while the build runs; only the targets the
  chosen parts run (the hybrid parts: the Qwen3.8-27B shape in llama.cpp's qwen35 architecture).
- ``sweep``: specexp sweeps of runtime=llamacpp with GPU telemetry: decode at concurrency 1, 8, 32
  with no drafter and with the draft model, and the prefill sweep 1k-32k (TTFT), cold, the host
  prompt cache off; the records go to OUT/records.tar.gz after each part.
- ``sim``: the same cells on runtime=sim.
- ``report``: benchmarks/results/gpu-h200-llamacpp.md (measured, simulated, ratio, energy) and
  gpu-h200-llamacpp.jsonl (the measured records, one per line, for calibrating the simulator).
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.gpu import cells

COMMIT = "0c1e57098"  # llama-cpp-python 0.3.36's CHANGELOG: "update llama.cpp to ggml-org/llama.cpp@0c1e57098"
CMAKE_FLAGS = [
    "-G",
    "Ninja",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_CUDA=ON",
    "-DGGML_NATIVE=OFF",
    "-DCMAKE_CUDA_ARCHITECTURES=90",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    f"-DLLAMA_BUILD_COMMIT={COMMIT}",
    "-DLLAMA_BUILD_NUMBER=0",
]
T0 = time.monotonic()
LEFT_OUT = (
    "docs",
    "models",
    "tests",
    "examples",
    "pocs",
    "benches",
    "media",
    "gguf-py",
    ".github",
    ".devops",
    "conversion",
    "skills",
    "tools/ui/src",
    "tools/ui/static",
    "tools/ui/tests",
    "tools/ui/package-lock.json",
    *(
        f"ggml/src/ggml-{b}"
        for b in (
            "vulkan",
            "sycl",
            "opencl",
            "metal",
            "hexagon",
            "cann",
            "webgpu",
            "openvino",
            "et",
            "virtgpu",
            "zdnn",
            "zendnn",
            "musa",
            "hip",
        )
    ),
)
"""Parts of the sdist's vendor/llama.cpp that a CUDA llama-server build does not read (4 MB remain)."""


def pack_source(sdist: Path, dest: Path) -> Path:
    """The sdist's vendor/llama.cpp as llama.cpp/ in a .tar.xz, without LEFT_OUT: small enough to
    travel to a machine with no network (`pip download --no-binary :all: llama-cpp-python==0.3.36`)."""
    with tarfile.open(sdist) as src, tarfile.open(dest, "w:xz") as out:
        for member in src:
            inner = (
                member.name.split("/", 1)[1] if "/" in member.name else ""
            )  # below llama_cpp_python-X/
            if inner != "vendor/llama.cpp" and not inner.startswith("vendor/llama.cpp/"):
                continue
            rel = inner[len("vendor/llama.cpp") :].lstrip("/")
            if any(rel == x or rel.startswith(x + "/") for x in LEFT_OUT):
                continue
            member.name = "llama.cpp/" + rel if rel else "llama.cpp"
            member.pax_headers = {
                k: v for k, v in member.pax_headers.items() if k != "path"
            }  # long names
            out.addfile(member, src.extractfile(member) if member.isfile() else None)
    return dest


def log(out: Path, text: str) -> None:
    line = f"[{time.monotonic() - T0:7.1f}s] {text}"
    print(line, flush=True)
    with (out / "log.txt").open("a") as f:
        f.write(line + "\n")


def build(
    work: Path,
    src_tar: Path,
    out: Path,
    parts: Path | None,
    also: tuple[str, ...] = (),
    jobs: int | None = None,
) -> Path:
    """llama-server (and the llama.cpp tools named in `also`, copied beside it) built for sm_90."""
    binary = work / "llama-server" / "bin" / "llama-server"
    if binary.is_file() and all((binary.parent / name).is_file() for name in also):
        log(out, f"build: {binary} is there")
        return binary
    if parts is not None and sorted(parts.glob("llama-server.xz.part-*")):
        binary.parent.mkdir(parents=True, exist_ok=True)
        blob = b"".join(p.read_bytes() for p in sorted(parts.glob("llama-server.xz.part-*")))
        binary.write_bytes(lzma.decompress(blob))
        binary.chmod(0o755)
        (binary.parent.parent / "llama.cpp-commit").write_text(COMMIT + "\n")
        log(out, f"build: {binary} from the parts a previous call brought back")
        return binary
    src = work / "src" / "llama.cpp"
    if not src.is_dir():
        src.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(src_tar) as tar:
            tar.extractall(src.parent, filter="tar")
    env = dict(os.environ)
    if not shutil.which("nvcc") and Path("/usr/local/cuda/bin/nvcc").is_file():
        env["PATH"] = "/usr/local/cuda/bin:" + env["PATH"]
        env["CUDACXX"] = "/usr/local/cuda/bin/nvcc"
    started = time.monotonic()
    configured = started
    try:
        with (out / "build.log").open("w") as blog:
            subprocess.run(
                ["cmake", "-S", str(src), "-B", str(work / "build"), *CMAKE_FLAGS],
                check=True,
                stdout=blog,
                stderr=subprocess.STDOUT,
                env=env,
            )
            configured = time.monotonic()
            subprocess.run(
                [
                    "cmake",
                    "--build",
                    str(work / "build"),
                    "--target",
                    "llama-server",
                    *also,
                    "-j",
                    str(jobs or os.cpu_count()),
                ],
                check=True,
                stdout=blog,
                stderr=subprocess.STDOUT,
                env=env,
            )
    except subprocess.CalledProcessError:
        print(
            "\n".join((out / "build.log").read_text(errors="replace").splitlines()[-60:]),
            flush=True,
        )
        raise
    binary.parent.mkdir(parents=True, exist_ok=True)
    for name in ("llama-server", *also):
        shutil.copy2(work / "build" / "bin" / name, binary.parent / name)
    (binary.parent.parent / "llama.cpp-commit").write_text(
        COMMIT + "\n"
    )  # read by runtime=llamacpp
    version = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, check=False
    )
    log(
        out,
        f"build: configure {configured - started:.0f} s, build {time.monotonic() - configured:.0f} s; "
        f"{(version.stdout + version.stderr).strip().splitlines()[-2:]}",
    )
    _bring_back(binary, out)
    return binary


def _bring_back(binary: Path, out: Path) -> None:
    """The binary, xz-compressed in parts of 15 MiB, into OUT when it fits in three: a later call on a
    fresh machine can carry them instead of building again."""
    started = time.monotonic()
    blob = subprocess.run(
        ["xz", "-T0", "-6", "-c", str(binary)], capture_output=True, check=True
    ).stdout
    part = 15 << 20
    log(
        out,
        f"build: binary {binary.stat().st_size / 2**20:.0f} MiB, xz {len(blob) / 2**20:.0f} MiB "
        f"({time.monotonic() - started:.0f} s)",
    )
    if len(blob) <= 3 * part:
        for i in range(0, len(blob), part):
            (out / f"llama-server.xz.part-{i // part}").write_bytes(blob[i : i + part])


def write_models(
    work: Path, out: Path, targets: set[tuple[str, str]], draft: bool
) -> dict[str, Path]:
    """The targets (conf/model/ entry and weight type each) and, with `draft`, the draft (qwen3-0.6b,
    BF16), keyed NAME-DTYPE: only what the chosen parts run, as the device's disk holds 64 GB."""
    from specexp.models.shaped_gguf import load_model, shape_of, write_shaped_model

    paths = {}
    wanted = [(name, dtype, 0) for name, dtype in sorted(targets)] + (
        [("qwen3-0.6b", "bf16", 1)] if draft else []
    )
    for name, dtype, seed in wanted:
        path = work / "models" / f"{name}-{dtype}-random.gguf"
        paths[f"{name}-{dtype}"] = path
        if path.is_file():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        write_shaped_model(
            path,
            shape_of(load_model(name)),
            dtype=dtype,
            seed=seed,  # type: ignore[arg-type]
            name=f"specexp-random-{name}",
        )
        log(
            out,
            f"models: {path.name} {path.stat().st_size / 1e9:.2f} GB in {time.monotonic() - started:.0f} s",
        )
    return paths


def specexp(
    sweep_dir: Path,
    overrides: list[str],
    timeout_s: float,
    out: Path,
    env: tuple[tuple[str, str], ...] = (),
) -> int:
    """`python -m specexp -m ...` (with `env` added to its environment, which the server it starts
    inherits); at the deadline it gets Ctrl-C, so it records the job as interrupted and stops the
    llama-server it started (a server runs in its own session and would outlive a kill)."""
    argv = [sys.executable, "-m", "specexp", "-m", *overrides, f"hydra.sweep.dir={sweep_dir}"]
    log(
        out,
        "run: " + " ".join(f"{k}={v}" for k, v in env) + (" " if env else "") + " ".join(argv[3:]),
    )
    sweep_dir.mkdir(parents=True, exist_ok=True)
    with (sweep_dir / "console.txt").open("w") as console:
        proc = subprocess.Popen(
            argv,
            cwd=REPO,
            stdout=console,
            stderr=subprocess.STDOUT,
            env={**os.environ, **dict(env)},
        )
        try:
            rc = proc.wait(timeout=max(timeout_s, 1))
        except subprocess.TimeoutExpired:
            log(out, f"  deadline ({timeout_s:.0f} s): interrupting; finished jobs are kept")
            proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
    tail = (sweep_dir / "console.txt").read_text(errors="replace").strip().splitlines()[-4:]
    log(out, f"  rc={rc}: " + " | ".join(tail))
    return rc


def pack(work: Path, out: Path) -> None:
    """Every result.json and requests.jsonl (and the head and tail of its server.log) into
    OUT/records.tar.gz."""
    with tarfile.open(out / "records.tar.gz", "w:gz") as tar:
        for path in sorted((work / "sweeps").rglob("result.json")):
            tar.add(path, arcname=str(path.relative_to(work)))
            if (path.parent / "requests.jsonl").is_file():
                tar.add(
                    path.parent / "requests.jsonl",
                    arcname=str((path.parent / "requests.jsonl").relative_to(work)),
                )
            server_log = path.parent / "server.log"
            if server_log.is_file():
                lines = server_log.read_text(errors="replace").splitlines()
                short = (
                    "\n".join(lines[:150] + ["..."] + lines[-80:])
                    if len(lines) > 230
                    else "\n".join(lines)
                )
                keep = path.parent / "server.log.short"
                keep.write_text(short + "\n")
                tar.add(keep, arcname=str(keep.relative_to(work)))
                if (
                    server_log.stat().st_size < 4 << 20
                ):  # whole, when it is small enough to come back
                    tar.add(server_log, arcname=str(server_log.relative_to(work)))


def host_info(out: Path) -> None:
    """The machine's CPU (llama-server samples every slot on it) and the GPU's clocks, into the log."""
    cpu = (
        Path("/proc/cpuinfo").read_text(errors="replace") if Path("/proc/cpuinfo").is_file() else ""
    )
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in cpu.splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    log(out, f"host: cpu {model!r}, {os.cpu_count()} cores, load {os.getloadavg()}")
    query = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,temperature.gpu"
    smi = (
        subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        )
        if shutil.which("nvidia-smi")
        else None
    )
    log(out, f"host: gpu {smi.stdout.strip() if smi else '?'}")


def sweep(
    work: Path,
    binary: Path,
    models: dict[str, Path],
    out: Path,
    deadline: float,
    parts: list[cells.Part],
) -> None:
    host_info(out)
    for part in parts:
        left = deadline - time.monotonic()
        if left < 30:
            log(out, f"sweep: {part.name} not started ({left:.0f} s left)")
            continue
        draft = models.get("qwen3-0.6b-bf16")
        overrides = part.measured(
            str(binary), str(models[f"{part.model}-{part.dtype}"]), str(draft)
        )
        specexp(work / "sweeps" / part.name, overrides, left - 10, out, part.env)
        pack(work, out)


def simulate(sim_dir: Path, out: Path, extra: list[str], parts: list[cells.Part]) -> None:
    for part in parts:
        specexp(sim_dir / part.name, part.simulated() + extra, 600, out)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "stages", nargs="+", choices=["source", "all", "build", "models", "sweep", "sim", "report"]
    )
    parser.add_argument(
        "--sdist", type=Path, help="llama_cpp_python-0.3.36.tar.gz (source stage: writes --src)"
    )
    parser.add_argument(
        "--src", type=Path, help="tarball of the sdist's vendor/llama.cpp (top folder llama.cpp/)"
    )
    parser.add_argument("--work", type=Path, default=Path("/root/specexp-gpu"))
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu-out")))
    parser.add_argument(
        "--deadline-s", type=float, default=570.0, help="stop starting sweep parts after this"
    )
    parser.add_argument(
        "--binary-parts", type=Path, help="folder of llama-server.xz.part-* from an earlier call"
    )
    parser.add_argument(
        "--records",
        type=Path,
        action="append",
        default=[],
        help="records.tar.gz of a device run (sim/report stages); repeat for several calls",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=[p.name for p in cells.PARTS],
        help="sweep parts to run (default: the first call's set; sim/report: all)",
    )
    parser.add_argument(
        "--sim-override", action="append", default=[], help="extra override for the sim runs"
    )
    parser.add_argument(
        "--jobs", type=int, help="build: parallel compile jobs (default: every core)"
    )
    args = parser.parse_args()
    stages = (
        {"build", "models", "sweep", "sim", "report"} if "all" in args.stages else set(args.stages)
    )
    args.out.mkdir(parents=True, exist_ok=True)
    if "source" in stages:
        print(pack_source(args.sdist, args.src))
        stages.discard("source")
    deadline = T0 + args.deadline_s
    chosen = [p for p in cells.PARTS if p.name in args.parts] if args.parts else None
    run_parts = chosen or [p for p in cells.PARTS if not p.extra]
    targets, draft = {(p.model, p.dtype) for p in run_parts}, any(p.draft for p in run_parts)
    models: dict[str, Path] = {}
    writer = None
    if "models" in stages:  # the writer is I/O bound: it runs beside the build
        writer = threading.Thread(
            target=lambda: models.update(write_models(args.work, args.out, targets, draft))
        )
        writer.start()
    binary = (
        build(args.work, args.src, args.out, args.binary_parts, jobs=args.jobs)
        if "build" in stages
        else args.work / "llama-server/bin/llama-server"
    )
    if writer is not None:
        writer.join()
    if "sweep" in stages:
        sweep(
            args.work,
            binary,
            models or write_models(args.work, args.out, targets, draft),
            args.out,
            deadline,
            run_parts,
        )
    if "sim" in stages or "report" in stages:
        from benchmarks.gpu import compare

        measured = args.work / "sweeps"
        for records in args.records:
            measured = compare.unpack(records, args.work)
        if "sim" in stages:
            simulate(args.work / "sim", args.out, args.sim_override, chosen or cells.PARTS)
        if "report" in stages:
            logs = (
                [r.parent / "log.txt" for r in args.records]
                if args.records
                else [args.out / "log.txt"]
            )
            for path in compare.write(
                measured, args.work / "sim", REPO / "benchmarks" / "results", logs
            ):
                log(args.out, f"report: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
