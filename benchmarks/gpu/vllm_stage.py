"""Carry vLLM with CUDA to a GPU machine that reaches no registry, and install it there.

    .venv/bin/python benchmarks/gpu/vllm_stage.py pack --out .gpu-stage/vllm       # here, once
    python3 benchmarks/gpu/vllm_stage.py install --pieces /tmp/specexp-vllm       # on the device

The device's image holds torch 2.11.0 (CUDA 13), which vLLM 0.26.0 pins exactly, so torch stays
where it is and only vLLM and what the image lacks travel (`vllm_h200/wheels.txt`: 124 wheels, the
versions that resolved against the image; `vllm_h200/requirements.txt`: vLLM's own requirement list
without the kernels Hopper does not need). Besides them travel the few packages specexp itself needs
that the image lacks (SPECEXP_WHEELS) and the llama.cpp sources of `llamacpp_h200.py source`.

`pack` downloads the wheels for the device's Python (3.12, x86-64, manylinux), rewrites vLLM's
wheel without the kernels Hopper never loads (STRIPPED: FlashAttention 2, which vLLM does not pick on
SM90 where FlashAttention 3 runs; the optional Rust front end; deep_gemm's extension builds for other
Pythons) and their RECORD lines, tars everything with its sha256 and cuts it into pieces small enough
that one piece and the repository travel together in one device call (64 MiB a call).

`install` joins the pieces, checks the sha256, untars, and installs offline into the image's own
Python: vLLM and mistral_common without their requirements (mistral_common caps numpy below the
image's), then vLLM's requirement list resolved against the image, so that only what is missing is
added. It ends with the checks that say the install will serve: `import vllm, vllm._C_stable_libtorch`
and FlashAttention 3 available.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHEELS = HERE / "vllm_h200" / "wheels.txt"
REQUIREMENTS = HERE / "vllm_h200" / "requirements.txt"
VLLM = "vllm==0.26.0"
PLATFORMS = (
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
"""The device is x86-64 with glibc 2.39; llguidance's wheel is tagged manylinux_2_31 (pip matches a tag exactly)."""
PYTHON = "3.12"
STRIPPED = ("vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so", "vllm/vllm-rs")
"""Files of vLLM's wheel that a Hopper server never loads (deep_gemm's builds for other Pythons too)."""
NO_DEPS = ("vllm", "mistral_common")
"""Installed without their requirements: vLLM's own list is installed next (requirements.txt), and
mistral_common's numpy<2.4 cap for Python <= 3.12 conflicts with the image's numpy 2.5.2, with which it works."""
SPECEXP_WHEELS = (
    "hydra-core==1.3.8",
    "omegaconf==2.3.0",
    "antlr4-python3-runtime==4.9.3",
    "gguf==0.19.0",
)
"""What `python3 -m specexp` needs on the device besides the image and vLLM's set (pinned as pyproject.toml;
antlr4's 4.9.3 is an sdist only, built into a wheel here)."""
PIECE_BYTES = 12 << 20
"""One piece and the repository (its tracked files, about 44 MiB) must stay under the 64 MiB a device
call carries (22 MiB, then 20, then 16, until the records outgrew them; each sitting's records add about
2 MiB: SGLang's archive is 10 pieces at 12 MiB, vLLM's 18, its last under 1 MiB and carried with the
17th)."""


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def pinned(path: Path) -> list[str]:
    return [
        line.split("#")[0].strip()
        for line in path.read_text().splitlines()
        if line.split("#")[0].strip()
    ]


def download(dest: Path) -> list[Path]:
    """Every wheel of WHEELS and SPECEXP_WHEELS for the device's Python, into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    platform = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    base = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(dest)]
    subprocess.run(
        [
            *base,
            "--only-binary=:all:",
            "--python-version",
            PYTHON,
            "--implementation",
            "cp",
            *platform,
            *pinned(WHEELS),
            *[w for w in SPECEXP_WHEELS if not w.startswith("antlr4")],
        ],
        check=True,
    )
    with (
        tempfile.TemporaryDirectory() as tmp
    ):  # antlr4-python3-runtime 4.9.3: an sdist, pure Python
        antlr = [w for w in SPECEXP_WHEELS if w.startswith("antlr4")]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--wheel-dir",
                tmp,
                *antlr,
            ],
            check=True,
        )
        for wheel in Path(tmp).glob("*.whl"):
            shutil.copy2(wheel, dest / wheel.name)
    return sorted(dest.glob("*.whl"))


def strip_vllm(wheel: Path) -> Path:
    """vLLM's wheel rewritten in place without STRIPPED and deep_gemm's builds for other Pythons."""
    tag = "cpython-" + PYTHON.replace(".", "")

    def dropped(name: str) -> bool:
        if any(name == s or name.startswith(s + "/") for s in STRIPPED):
            return True
        return name.startswith("vllm/third_party/deep_gemm/_C.cpython-") and tag not in name

    out = wheel.with_suffix(".stripped")
    with (
        zipfile.ZipFile(wheel) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as dst,
    ):
        for info in src.infolist():
            if dropped(info.filename):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = [
                    ln for ln in data.decode().splitlines() if not dropped(ln.split(",", 1)[0])
                ]
                data = ("\n".join(lines) + "\n").encode()
            dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    out.replace(wheel)
    return wheel


def pack(out: Path, llama_src: Path | None, extra: tuple[Path, ...] | list[Path] = ()) -> None:
    """The pieces of the tar of every wheel (vLLM stripped), `llama_src` and the `extra` files (under
    `extra/`: the wheels of packaged weights, say), with the tar's sha256."""
    work = out / "wheels"
    wheels = download(work)
    vllm = next(w for w in wheels if w.name.startswith("vllm-"))
    before = vllm.stat().st_size
    strip_vllm(vllm)
    log(f"pack: {vllm.name} {before / 1e6:.1f} MB -> {vllm.stat().st_size / 1e6:.1f} MB")
    tar_path = out / "vllm-h200.tar"
    with tarfile.open(tar_path, "w") as tar:
        for wheel in wheels:
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
        if llama_src is not None:
            tar.add(llama_src, arcname=f"src/{llama_src.name}")
        for path in extra:
            tar.add(path, arcname=f"extra/{path.name}")
    digest, index = split_into_pieces(tar_path, out)
    tar_path.unlink()
    shutil.rmtree(work)
    log(
        f"pack: {len(wheels)} wheels, {index} pieces of at most {PIECE_BYTES >> 20} MiB in {out}, sha256 {digest[:16]}"
    )


def split_into_pieces(archive: Path, out: Path, piece_bytes: int = PIECE_BYTES) -> tuple[str, int]:
    """`archive` cut into `out`/piece-0, piece-1, ... of `piece_bytes` (old pieces removed), with its
    sha256 in `out`/SHA256; (the sha256, the number of pieces)."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("piece-*"):
        old.unlink()
    index = 0
    with archive.open("rb") as f:
        while chunk := f.read(piece_bytes):
            (out / f"piece-{index}").write_bytes(chunk)
            index += 1
    (out / "SHA256").write_text(f"{digest}  {archive.name}\n")
    return digest, index


def join_pieces(pieces: Path, sha256: str) -> tuple[list[Path], bytes]:
    """The pieces in `pieces`, in order, and their bytes joined; exits when the join's sha256 is not
    `sha256`."""
    parts = sorted(pieces.glob("piece-*"), key=lambda p: int(p.name.split("-")[1]))
    blob = b"".join(p.read_bytes() for p in parts)
    digest = hashlib.sha256(blob).hexdigest()
    if digest != sha256:
        raise SystemExit(
            f"install: the {len(parts)} pieces in {pieces} join to sha256 {digest}, expected {sha256}"
        )
    return parts, blob


def install(pieces: Path, sha256: str, dest: Path) -> None:
    """Join the pieces, check them, untar into `dest` and install into this Python."""
    started = time.monotonic()
    parts, blob = join_pieces(pieces, sha256)
    dest.mkdir(parents=True, exist_ok=True)
    tar_path = dest / "vllm-h200.tar"
    tar_path.write_bytes(blob)
    with tarfile.open(tar_path) as tar:
        tar.extractall(dest, filter="tar")
    tar_path.unlink()
    wheels = dest / "wheels"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        "--disable-pip-version-check",
        "--no-cache-dir",
    ]
    first = [str(w) for w in wheels.glob("*.whl") if w.name.split("-")[0].lower() in NO_DEPS]
    subprocess.run([*pip, "--no-deps", *first], check=True)
    subprocess.run(
        [
            *pip,
            "--find-links",
            str(wheels),
            "-r",
            str(REQUIREMENTS),
            *[str(w) for w in wheels.glob("*.whl") if _is_specexp_wheel(w.name)],
        ],
        check=True,
    )
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import vllm, vllm._C_stable_libtorch; "
            "from vllm.vllm_flash_attn import flash_attn_interface as f; "
            "print(vllm.__version__, 'FA3', f.FA3_AVAILABLE, 'FA2', f.FA2_AVAILABLE)",
        ],
        capture_output=True,
        text=True,
    )
    log(
        f"install: {len(parts)} pieces, {len(blob) / 1e6:.0f} MB, in {time.monotonic() - started:.0f} s: "
        f"{(check.stdout + check.stderr).strip().splitlines()[-1:]}"
    )
    if check.returncode != 0:
        raise SystemExit(check.stderr)


def _is_specexp_wheel(name: str) -> bool:
    stem = name.split("-")[0].lower().replace("_", "-")
    return any(stem == w.split("==")[0].replace("_", "-") for w in SPECEXP_WHEELS)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stage", choices=["pack", "install"])
    parser.add_argument(
        "--out", type=Path, default=Path(".gpu-stage/vllm"), help="pack: the pieces' folder"
    )
    parser.add_argument(
        "--llama-src", type=Path, help="pack: the llama.cpp tarball of `llamacpp_h200.py source`"
    )
    parser.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="pack: a file carried under extra/ (e.g. the wheel of packaged weights)",
    )
    parser.add_argument(
        "--pieces", type=Path, default=Path("/tmp/specexp-vllm"), help="install: the pieces' folder"
    )
    parser.add_argument(
        "--sha256",
        help="install: the joined tar's sha256 (default: SHA256 beside the pieces, "
        "else in .gpu-stage/vllm/)",
    )
    parser.add_argument("--dest", type=Path, default=Path("/tmp/specexp-vllm/unpacked"))
    args = parser.parse_args()
    if args.stage == "pack":
        pack(args.out, args.llama_src, args.extra)
    else:
        sha = args.sha256
        for path in (args.pieces / "SHA256", Path(".gpu-stage/vllm/SHA256")):
            if sha is None and path.is_file():
                sha = path.read_text().split()[0]
        if sha is None:
            raise SystemExit("install: no --sha256 and no SHA256 file")
        install(args.pieces, sha, args.dest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
