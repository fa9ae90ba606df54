"""Carry SGLang with CUDA to a GPU machine that reaches no registry, and unpack it there.

    .venv/bin/python benchmarks/gpu/sglang_stage.py pack        # here, once (about 10 minutes)
    python3 benchmarks/gpu/sglang_stage.py install               # on the device, after the pieces

SGLang 0.5.12 cannot share the image's site-packages with vLLM (their openai, xgrammar, llguidance and
transformers clash: benchmarks/results/sglang-h200-size.md), so it travels as one site folder that
goes first on PYTHONPATH, with the image's Python and torch 2.11.0 (CUDA 13) untouched. Its closure
stripped for Hopper is `sglang_h200/wheels.txt` (53 wheels: sglang-kernel 0.4.2.post2 is a CUDA 13
build, which the image's CUDA 13.0 serves). specexp's own packages the image lacks (hydra-core,
omegaconf, antlr4; pydantic and gguf are in SGLang's set) go into the same folder, so one
`PYTHONPATH` runs specexp and the servers it starts.

`pack` downloads the wheels for the device's Python (3.12, x86-64), installs them with `--no-deps`
into one folder, strips what an H200 never loads (sglang-kernel's Blackwell ops and FlashMLA, the
mscclpp library, headers, xgrammar's static library, bytecode), adds libnuma (sgl_kernel needs it; used
only where the device lacks it), and cuts its `tar.xz` into pieces small enough that one piece and the
repository travel in one device call (64 MiB). Everything is cached under
`~/.cache/specexp/sglang-0.5.12/`.

`install` joins the pieces, checks the sha256 and unpacks the folder (SITE).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.gpu import vllm_stage  # noqa: E402
from benchmarks.gpu.vllm_stage import join_pieces, split_into_pieces  # noqa: E402

HERE = Path(__file__).resolve().parent
VERSION = "0.5.12"
WHEELS = HERE / "sglang_h200" / "wheels.txt"
SPECEXP_WHEELS = ("hydra-core==1.3.8", "omegaconf==2.3.0")
ANTLR = "antlr4-python3-runtime==4.9.3"
"""omegaconf's parser runtime: an sdist only, built into a wheel here."""
CACHE = Path.home() / ".cache" / "specexp" / f"sglang-{VERSION}"
SITE = Path("/tmp/sglang-site")
PIECES = Path("/tmp/specexp-sglang")
PIECE_BYTES = vllm_stage.PIECE_BYTES
"""One piece and the repository under the 64 MiB a call carries, as the vLLM stage's."""
PLATFORMS = tuple(f"manylinux_2_{n}_x86_64" for n in (39, 38, 37, 36, 35, 34, 33, 32, 31, 30)) + (
    tuple(f"manylinux_2_{n}_x86_64" for n in (29, 28, 27, 26, 25, 24, 17, 12, 5))
    + ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
)
"""The device is x86-64 with glibc 2.39; the sglang wheel itself is tagged manylinux_2_34."""
STRIPPED = (
    "sgl_kernel/sm100",
    "sgl_kernel/flashmla_ops.abi3.so",
    "lib",
    "lib64",
    "include",
    "_mscclpp.cpython-310-x86_64-linux-gnu.so",
    "xgrammar/include",
)
"""What an H200 never loads (benchmarks/results/sglang-h200-size.md)."""


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _pip_target(*args: str) -> list[str]:
    platform = [a for tag in PLATFORMS for a in ("--platform", tag)]
    return [
        *args,
        "--only-binary=:all:",
        "--python-version",
        "3.12",
        "--implementation",
        "cp",
        *platform,
    ]


def download(dest: Path) -> list[Path]:
    """The wheels of WHEELS, SPECEXP_WHEELS and ANTLR (built) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    pins = [ln.split("#")[0].strip() for ln in WHEELS.read_text().splitlines()]
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        _pip_target(*pip, "download", "--quiet", "--no-deps", "--dest", str(dest))
        + [p for p in pins if p]
        + list(SPECEXP_WHEELS),
        check=True,
    )
    if not list(dest.glob("antlr4_python3_runtime-*.whl")):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [*pip, "wheel", "--quiet", "--no-deps", "--wheel-dir", tmp, ANTLR], check=True
            )
            for wheel in Path(tmp).glob("*.whl"):
                shutil.copy2(wheel, dest / wheel.name)
    return sorted(dest.glob("*.whl"))


def build_site(wheels: list[Path], site: Path) -> None:
    """Every wheel installed with --no-deps into `site`, then STRIPPED and bytecode removed."""
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    subprocess.run(
        _pip_target(
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--target",
            str(site),
        )
        + [str(w) for w in wheels],
        check=True,
    )
    for rel in STRIPPED:
        path = site / rel
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for path in [*site.glob("xgrammar/**/*.a"), *site.rglob("__pycache__")]:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink()
    libs = site / "_syslibs"
    libs.mkdir(exist_ok=True)
    numa = Path("/lib/x86_64-linux-gnu/libnuma.so.1")
    if numa.exists():
        shutil.copy2(numa.resolve(), libs / "libnuma.so.1")


def pack(out: Path, rebuild: bool = False) -> None:
    """The pieces of SITE's tar.xz in `out`, with its sha256 (SHA256); the archive is built once and
    cached (`rebuild`: again)."""
    started = time.monotonic()
    archive = CACHE / "site.tar.xz"
    if rebuild or not archive.is_file():
        wheels = download(CACHE / "whl")
        site = CACHE / SITE.name
        build_site(wheels, site)
        partial = archive.with_suffix(".partial")
        with partial.open("wb") as sink:
            tar = subprocess.Popen(
                ["tar", "-C", str(site.parent), "-cf", "-", site.name], stdout=subprocess.PIPE
            )
            subprocess.run(["xz", "-6", "-T2"], stdin=tar.stdout, stdout=sink, check=True)
            if tar.wait() != 0:
                raise SystemExit("pack: tar failed")
        partial.replace(archive)
    digest, index = split_into_pieces(archive, out, PIECE_BYTES)
    log(
        f"pack: {archive.stat().st_size / 1e6:.1f} MB as tar.xz, {index} pieces "
        f"of at most {PIECE_BYTES >> 20} MiB in {out}, sha256 {digest[:16]}, "
        f"{time.monotonic() - started:.0f} s"
    )


def install(pieces: Path, sha256: str, site: Path = SITE) -> None:
    """Join the pieces, check them and unpack `site` (once per machine: `.ok` marks it done)."""
    if (site / ".ok").is_file():
        log(f"install: {site} already unpacked")
        return
    started = time.monotonic()
    parts, blob = join_pieces(pieces, sha256)
    digest = sha256
    if site.exists():
        shutil.rmtree(site)
    subprocess.run(
        ["tar", "-xJ", "-C", str(site.parent)], input=blob, check=True, capture_output=True
    )
    (site / ".ok").write_text(digest + "\n")
    log(
        f"install: {len(parts)} pieces, {len(blob) / 1e6:.0f} MB, in {time.monotonic() - started:.0f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stage", choices=["pack", "install"])
    parser.add_argument("--out", type=Path, default=Path(".gpu-stage/sglang"))
    parser.add_argument("--pieces", type=Path, default=PIECES)
    parser.add_argument("--rebuild", action="store_true", help="pack: download and build again")
    args = parser.parse_args()
    if args.stage == "pack":
        pack(args.out, args.rebuild)
        return 0
    sha = None
    for path in (args.pieces / "SHA256", Path(".gpu-stage/sglang/SHA256")):
        if sha is None and path.is_file():
            sha = path.read_text().split()[0]
    if sha is None:
        raise SystemExit("install: no SHA256 beside the pieces")
    install(args.pieces, sha)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
