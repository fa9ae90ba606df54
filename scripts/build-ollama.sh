#!/usr/bin/env bash
# Build Ollama (CPU only) from a source archive or folder, with Go and every Go module taken from
# Debian's packages, once, and cache it under ~/.cache/specexp/ollama/<version>/:
#   bin/ollama          the server and client
#   lib/ollama/*.so     ggml's CPU backends; ollama loads them from <its dir>/../lib/ollama
# Prints the binary's path on its last line; everything else goes to stderr.
#
#   scripts/build-ollama.sh                          # $SPECEXP_OLLAMA_SRC, else ../shared/vendor/
#   scripts/build-ollama.sh path/to/ollama-v0.24.0-src.tar.xz   # or .tar.gz, or a folder
#
# No module proxy and no Go download: Debian's newer suites are read through a private apt
# configuration made from the machine's own sources with the suite names changed
# (scripts/ollama_modules.py sources); the system's apt configuration is never touched.
# A failed build keeps its work folder, so running again resumes where it stopped.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
helper="$repo/scripts/ollama_modules.py"
say() { echo "build-ollama: $*" >&2; }
die() {
  echo "build-ollama: $*" >&2
  exit 1
}

# --- which source, which version ---------------------------------------------------------------
default_source="$repo/../shared/vendor/ollama-v0.24.0-src.tar.xz"
source="${1:-${SPECEXP_OLLAMA_SRC:-}}"
if [ -z "$source" ]; then
  [ -e "$default_source" ] ||
    die "no Ollama source: put ollama-v0.24.0-src.tar.xz in $(realpath -m "$repo/../shared/vendor")/, set SPECEXP_OLLAMA_SRC, or pass an archive or folder"
  source="$default_source"
fi
[ -e "$source" ] || die "no Ollama source at $source (an ollama-<version> .tar.xz/.tar.gz archive or folder)"
source="$(realpath "$source")"

# The version comes from the archive's or folder's name (ollama-v0.24.0-src.tar.xz,
# ollama-0.24.0/), else from a git checkout's tag; SPECEXP_OLLAMA_VERSION overrides both.
version="${SPECEXP_OLLAMA_VERSION:-}"
if [ -z "$version" ]; then
  name="$(basename "$source")"
  name="${name%.tar.xz}" name="${name%.tar.gz}" name="${name%.tgz}" name="${name%-src}"
  if [[ "$name" =~ ^ollama-v?([0-9]+\.[0-9]+\.[0-9]+.*)$ ]]; then
    version="${BASH_REMATCH[1]}"
  elif [ -d "$source/.git" ] && command -v git >/dev/null; then
    version="$(git -C "$source" describe --tags --abbrev=0 2>/dev/null || true)"
    version="${version#v}"
  fi
fi
[ -n "$version" ] || die "cannot tell the Ollama version of $source: name it ollama-<version> or set SPECEXP_OLLAMA_VERSION"

cache_root="${SPECEXP_CACHE:-$HOME/.cache/specexp}"
cache="$cache_root/ollama/$version"
binary="$cache/bin/ollama"

# A cached build counts when the binary reports its version and the CPU backends are beside it.
# OLLAMA_HOST points at a closed port so --version never waits on, or asks, another server.
cached() {
  [ -x "$binary" ] && compgen -G "$cache/lib/ollama/libggml-cpu*.so" >/dev/null &&
    [[ "$(OLLAMA_HOST=127.0.0.1:1 "$binary" --version 2>&1)" == *"version is $version"* ]]
}
if cached; then
  echo "$binary"
  exit 0
fi

# --- what the build needs from the system ------------------------------------------------------
# Debian packages for the tools and headers the build uses. As root on Debian the script
# installs what is missing (as scripts/test does for chromium); otherwise it names the package.
missing=()
if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  die "apt-get and dpkg-deb are required: Go and its modules come from Debian's packages"
fi
command -v python3 >/dev/null || missing+=(python3)
command -v cmake >/dev/null || missing+=(cmake)
command -v make >/dev/null || missing+=(make)
{ command -v cc >/dev/null && command -v c++ >/dev/null; } || missing+=(build-essential)
command -v xz >/dev/null || missing+=(xz-utils)
command -v flock >/dev/null || missing+=(util-linux)
# go-sqlite3, as Debian packages it, links the system's SQLite through cgo.
if command -v cc >/dev/null && ! echo '#include <sqlite3.h>' | cc -E -x c - >/dev/null 2>&1; then
  missing+=(libsqlite3-dev)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing build dependencies: apt-get install ${missing[*]}"
  say "installing Debian's ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null ||
    die "could not install ${missing[*]} (apt-get install ${missing[*]})"
fi
cmake_version="$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
[ "$(printf '%s\n3.21\n' "$cmake_version" | sort -V | head -n 1)" = 3.21 ] ||
  die "cmake >= 3.21 is required (have $cmake_version; bookworm-backports has a newer cmake)"

mkdir -p "$cache"
# One build per version at a time; a second caller waits, then finds the cached binary.
exec 9>"$cache/.lock"
flock 9
if cached; then
  echo "$binary"
  exit 0
fi
start=$SECONDS

# --- the source, in a work folder kept until the build succeeds --------------------------------
work="$cache/work"
src="$work/src"
if [ ! -f "$work/.source-ready" ]; then
  say "unpacking $source"
  rm -rf "$work"
  mkdir -p "$src"
  if [ -d "$source" ]; then
    cp -a "$source/." "$src/"
    rm -rf "$src/build" "$src/dist"
  else
    case "$source" in
      *.tar.xz | *.txz) tar -xJf "$source" -C "$src" ;;
      *.tar.gz | *.tgz) tar -xzf "$source" -C "$src" ;;
      *) die "cannot unpack $source: give a .tar.xz, a .tar.gz or a folder" ;;
    esac
    # Release archives hold one top folder (ollama-0.24.0/); lift its contents up.
    if [ ! -f "$src/go.mod" ] && [ "$(find "$src" -mindepth 1 -maxdepth 1 | wc -l)" = 1 ]; then
      top="$(find "$src" -mindepth 1 -maxdepth 1)"
      mv "$top" "$work/top" && rmdir "$src" && mv "$work/top" "$src"
    fi
  fi
  [ -f "$src/go.mod" ] && [ -f "$src/CMakePresets.json" ] ||
    die "$source is not an Ollama source tree (no go.mod and CMakePresets.json at its top)"
  # The build rewrites go.mod (replace lines, then go's own additions); modules are picked from
  # the release's own.
  cp "$src/go.mod" "$work/go.mod.orig"
  touch "$work/.source-ready"
fi

# --- a private apt configuration over Debian's newer suites ------------------------------------
# Same URIs, components and key as the machine's own Debian entry, other suite names; its own
# lists and cache folders, no preferences. Nothing under /etc/apt or /var/lib/apt is written.
apt_dir="$cache_root/ollama/apt"
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/empty" "$apt_dir/lists/partial" \
  "$apt_dir/cache/archives/partial"
python3 "$helper" sources >"$apt_dir/sources.list.d/debian.sources"
apt_opts=(
  -o "Dir::Etc::sourcelist=/dev/null"
  -o "Dir::Etc::sourceparts=$apt_dir/sources.list.d"
  -o "Dir::Etc::preferences=/dev/null"
  -o "Dir::Etc::preferencesparts=$apt_dir/empty"
  -o "Dir::State::Lists=$apt_dir/lists"
  -o "Dir::Cache=$apt_dir/cache"
  # apt downloads as _apt when run as root, and _apt cannot write under a private $HOME.
  -o "APT::Sandbox::User=$(id -un)"
)
say "reading Debian's index for: $(sed -n 's/^Suites: //p' "$apt_dir/sources.list.d/debian.sources")"
apt-get "${apt_opts[@]}" -q update >"$apt_dir/update.log" 2>&1 ||
  die "apt-get update of the private configuration failed (see $apt_dir/update.log)"
# FILENAME<TAB>CODENAME of each Packages index (the $(...) are apt's placeholders, not bash's).
apt-get "${apt_opts[@]}" indextargets --format "\$(FILENAME)"$'\t'"\$(CODENAME)" \
  'Identifier: Packages' >"$apt_dir/index.txt"

# Debian's .debs are fetched with `apt-get download` and unpacked with `dpkg -x`: nothing is
# installed. download DIR PKG=VERSION...
download() {
  local dir="$1"
  shift
  mkdir -p "$dir"
  (cd "$dir" && apt-get "${apt_opts[@]}" -q download "$@" >"$dir/download.log" 2>&1) ||
    die "apt-get download failed for some of: $* (see $dir/download.log)"
}

# --- Go, from the newest golang-1.N-go that go.mod's go line allows ----------------------------
toolchain="$(python3 "$helper" toolchain "$work/go.mod.orig" "$apt_dir/index.txt")"
read -r go_pkg go_src_pkg go_version <<<"$toolchain"
go_series="${go_pkg%%=*}" # golang-1.27-go=1.27.3-1 -> 1.27
go_series="${go_series#golang-}" go_series="${go_series%-go}"
go_root="$cache_root/go/$go_version"
go_bin="$go_root/usr/lib/go-$go_series/bin"
if ! "$go_bin/go" version >/dev/null 2>&1; then
  say "fetching Go $go_version ($go_pkg, $go_src_pkg)"
  rm -rf "$go_root.tmp"
  download "$go_root.tmp/debs" "$go_pkg" "$go_src_pkg"
  for deb in "$go_root.tmp/debs"/*.deb; do dpkg -x "$deb" "$go_root.tmp"; done
  rm -rf "$go_root.tmp/debs" "$go_root"
  mv "$go_root.tmp" "$go_root"
fi
"$go_bin/go" version >/dev/null 2>&1 || die "Go $go_version from $go_pkg does not run here"

# --- Go modules: one Debian golang-*-dev package per module, as local replace targets ----------
# Rebuilt only when the source's go.mod changes; the .debs are dropped once copied.
modules="$cache/modules"
gomod_sum="$(sha256sum "$work/go.mod.orig" | cut -d' ' -f1)"
if [ "$(cat "$modules/.go.mod.sha256" 2>/dev/null)" != "$gomod_sum" ]; then
  say "picking a Debian package for each module of go.mod"
  python3 "$helper" select "$work/go.mod.orig" "$apt_dir/index.txt" "$cache/selection.tsv" \
    >"$cache/packages.txt"
  say "fetching $(wc -l <"$cache/packages.txt") golang-*-dev packages"
  rm -rf "$cache/debs" "$cache/debroot"
  mapfile -t packages <"$cache/packages.txt"
  download "$cache/debs" "${packages[@]}"
  for deb in "$cache/debs"/*.deb; do dpkg -x "$deb" "$cache/debroot"; done
  cp "$work/go.mod.orig" "$cache/go.mod.debian"
  python3 "$helper" modules "$cache/go.mod.debian" "$cache/selection.tsv" "$cache/debs" \
    "$cache/debroot" "$modules" 2>"$cache/modules.log" ||
    die "laying out the Go modules failed (see $cache/modules.log)"
  tail -n 1 "$cache/modules.log" >&2
  rm -rf "$cache/debs" "$cache/debroot"
  echo "$gomod_sum" >"$modules/.go.mod.sha256"
  rm -f "$src/ollama" # built against other modules, if any
fi
cp "$cache/go.mod.debian" "$src/go.mod"
rm -f "$src/go.sum" # Debian's sources are not the checksummed ones

# --- go build: offline, Debian's modules only ---------------------------------------------------
# Go's caches and its config folder (go env -w settings, telemetry) stay in the work folder:
# nothing of the user's Go set-up changes the build, and the build writes nothing under $HOME.
export PATH="$go_bin:$PATH" GOPROXY=off GOFLAGS=-mod=mod GOSUMDB=off GONOSUMDB='*' \
  GOTOOLCHAIN=local CGO_ENABLED=1 GOCACHE="$work/gocache" GOPATH="$work/gopath" \
  GOMODCACHE="$work/gopath/pkg/mod" XDG_CONFIG_HOME="$work/config"
if [ ! -x "$src/ollama" ]; then
  say "go build (Go $go_version; 3-5 minutes on 2 cores; log: $work/go-build.log)"
  # server.mode=release keeps gin's debug route listing out of the server log, as releases do.
  (cd "$src" && go build -trimpath -o ollama.tmp -ldflags "-w -s \
    -X github.com/ollama/ollama/version.Version=$version \
    -X github.com/ollama/ollama/server.mode=release" .) >"$work/go-build.log" 2>&1 || {
    grep -v '^go: found ' "$work/go-build.log" | tail -n 20 >&2
    die "go build failed (log: $work/go-build.log)"
  }
  mv "$src/ollama.tmp" "$src/ollama"
fi

# --- ggml's CPU backends: the CPU preset, with every GPU backend off explicitly ----------------
# An installed nvcc or Vulkan SDK would otherwise be picked up by the configure step.
say "cmake --preset CPU (about 3 minutes on 2 cores; log: $work/cmake.log)"
(
  cd "$src" &&
    cmake --preset CPU -DCMAKE_CUDA_COMPILER=OFF -DCMAKE_HIP_COMPILER=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_Vulkan=ON -DMLX_ENGINE=OFF &&
    cmake --build --preset CPU -j "$(nproc)"
) >"$work/cmake.log" 2>&1 || {
  tail -n 20 "$work/cmake.log" >&2
  die "the CMake build of ggml's CPU backends failed (log: $work/cmake.log)"
}

# --- install into the cache: lib/ollama first, the binary last (its presence means done) -------
# (`cmake --install --prefix` would not do: the preset bakes its own install folder in at
# configure time.) cp -a keeps libggml-base.so's version links.
rm -rf "${cache:?}/lib" "${cache:?}/bin"
mkdir -p "$cache/lib/ollama"
cp -a "$src/build/lib/ollama/." "$cache/lib/ollama/"
compgen -G "$cache/lib/ollama/libggml-cpu*.so" >/dev/null ||
  die "the CMake build left no libggml-cpu*.so in $src/build/lib/ollama"
mkdir -p "$cache/bin"
cp "$src/ollama" "$binary.tmp"
mv "$binary.tmp" "$binary"

# --- check: a real `ollama serve` answers /api/version ---------------------------------------
check_home="$(mktemp -d "${TMPDIR:-/tmp}/specexp-ollama-check.XXXXXX")"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
HOME="$check_home" OLLAMA_HOST="127.0.0.1:$port" OLLAMA_NO_CLOUD=1 \
  "$binary" serve >"$check_home/serve.log" 2>&1 &
serve_pid=$!
answer="$(python3 - "$port" <<'EOF'
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/version"
for _ in range(60):
    try:
        print(urllib.request.urlopen(url, timeout=2).read().decode()); break
    except OSError:
        time.sleep(0.5)
EOF
)"
kill "$serve_pid" 2>/dev/null || true
wait "$serve_pid" 2>/dev/null || true
if ! grep -qF "\"$version\"" <<<"$answer"; then
  tail -n 20 "$check_home/serve.log" >&2
  rm -f "$binary"
  die "the built ollama serve did not answer /api/version with $version (got: ${answer:-nothing})"
fi
rm -rf "$check_home"
say "ollama $version built in $(((SECONDS - start) / 60)) min; /api/version answered $answer"

# The source copy, Go's build cache and the CMake build are only needed to resume a failed build.
rm -rf "$work"
echo "$binary"
