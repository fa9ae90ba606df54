#!/usr/bin/env bash
# Build llama.cpp's llama-server (CPU, server target only) from the llama.cpp sources
# vendored in the llama-cpp-python sdist on PyPI, once, and cache it under
# ~/.cache/specexp/llama-server/<version>/. Prints the binary's path on its last line.
#
#   scripts/build-llama-server.sh            # build if missing, print path
#   LLAMA_CPP_PYTHON_VERSION=0.3.36 scripts/build-llama-server.sh
set -euo pipefail

version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
cache="${SPECEXP_CACHE:-$HOME/.cache/specexp}/llama-server/$version"
binary="$cache/bin/llama-server"

if [ -x "$binary" ] && "$binary" --version >/dev/null 2>&1; then
  echo "$binary"
  exit 0
fi

for tool in cmake ninja cc c++; do
  command -v "$tool" >/dev/null || { echo "build-llama-server: '$tool' is required (apt-get install cmake ninja-build build-essential)" >&2; exit 1; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/specexp-llama-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "build-llama-server: fetching llama-cpp-python==$version sdist" >&2
python3 -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work/dl" >&2
tar -xzf "$work"/dl/llama_cpp_python-"$version".tar.gz -C "$work"
src="$work/llama_cpp_python-$version/vendor/llama.cpp"

echo "build-llama-server: configuring (CPU, server target only)" >&2
cmake -S "$src" -B "$work/build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >&2

echo "build-llama-server: building (6-10 minutes on 2 cores)" >&2
cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2

mkdir -p "$cache/bin"
strip -o "$cache/bin/llama-server.tmp" "$work/build/bin/llama-server"
mv "$cache/bin/llama-server.tmp" "$binary"
"$binary" --version >&2 || true
echo "$binary"
