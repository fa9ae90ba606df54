#!/usr/bin/env python3
"""Go toolchain and Go modules for building Ollama from Debian's packages (stdlib only).

scripts/build-ollama.sh drives it; it never downloads anything itself. Subcommands:

  sources                      print a deb822 sources file: the machine's own Debian entry
                               (URIs, components, key) with the suite names changed
  toolchain GOMOD INDEX        print "golang-1.N-go=V golang-1.N-src=V GOVERSION" for go.mod's go line
  select GOMOD INDEX OUT.tsv   pick a golang-*-dev package per module of go.mod (closest version in
                               the apt index), plus what those packages depend on; print pkg=version
  modules GOMOD SEL.tsv DEBS DEBROOT MODS
                               write one local module per Go module the downloaded packages hold,
                               stubs for the modules no package holds, and append `replace` lines
                               to GOMOD (a copy of Ollama's go.mod)

INDEX is a file of "FILENAME<TAB>CODENAME" lines (`apt-get indextargets`) naming Packages indexes.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

# Suites added to the machine's own (and its backports): Go 1.26+ and most module versions Ollama
# wants are only in these. SPECEXP_DEBIAN_SUITES (space-separated) overrides the whole list.
NEWER_SUITES = ("trixie", "sid")
# Newest first: where two suites hold the same version, the first is taken.
SUITE_PREFERENCE = ("sid", "unstable", "forky", "testing", "trixie", "stable")

GOCODE = "usr/share/gocode/src"
APT_HELPER = "/usr/lib/apt/apt-helper"

# Modules the name and homepage rules below do not find (found by hand while building 0.32.15
# and 0.24.0): module -> Debian binary package.
MANUAL_PACKAGES = {
    "github.com/charmbracelet/x/ansi": "golang-github-charmbracelet-x-dev",
    "github.com/charmbracelet/x/cellbuf": "golang-github-charmbracelet-x-dev",
    "github.com/charmbracelet/x/term": "golang-github-charmbracelet-x-dev",
    "github.com/pdevine/tensor": "golang-github-gorgonia-tensor-dev",
    "gorgonia.org/vecf32": "golang-github-gorgonia-vecf32-dev",
    "gorgonia.org/vecf64": "golang-github-gorgonia-vecf64-dev",
    "github.com/apache/arrow/go/arrow": "golang-github-apache-arrow-go-dev",
    "github.com/golang/protobuf": "golang-github-golang-protobuf-1-5-dev",
    "github.com/dlclark/regexp2": "golang-github-dlclark-regexp2-dev",
    "github.com/emirpasic/gods/v2": "golang-github-emirpasic-gods-v2-dev",
    "github.com/pelletier/go-toml/v2": "golang-github-pelletier-go-toml.v2-dev",
    "github.com/aymanbagabas/go-osc52/v2": "golang-github-aymanbagabas-go-osc52-v2-dev",
    "github.com/gogo/protobuf": "golang-github-gogo-protobuf-dev",
    "github.com/klauspost/cpuid/v2": "golang-github-klauspost-cpuid-dev",
}

# Forks Debian does not carry, served by their upstream: module -> (upstream import path in the
# package). The upstream's self-imports are rewritten to the fork's path.
SUBSTITUTES = {
    "github.com/pdevine/tensor": "gorgonia.org/tensor",
}

# Host part of an import path -> the word Debian's Go team uses in package names.
HOST_WORDS = {
    "github.com": "github",
    "gitlab.com": "gitlab",
    "golang.org": "golang",
    "gopkg.in": "gopkg",
    "google.golang.org": "google",
    "gonum.org": "gonum",
    "go4.org": "go4",
    "gorgonia.org": "gorgonia",
    "modernc.org": "modernc",
    "lukechampine.com": "lukechampine",
}


def fail(message: str) -> None:
    print(f"ollama_modules: {message}", file=sys.stderr)
    sys.exit(1)


# --- apt sources ---------------------------------------------------------------------------


def os_codename() -> str:
    text = Path("/etc/os-release").read_text()
    match = re.search(r"^VERSION_CODENAME=\"?([^\"\n]+)", text, re.M)
    if not match:
        fail("no VERSION_CODENAME in /etc/os-release: not a Debian release apt can extend")
    return match.group(1)


def deb822_entries(text: str) -> list[dict[str, str]]:
    entries = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0] in " \t" and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if fields:
            entries.append(fields)
    return entries


def one_line_entries(text: str) -> list[dict[str, str]]:
    entries = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.match(r"^(deb)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s*(.*)$", line)
        if not match:
            continue
        entry = {"types": "deb", "uris": match.group(3), "suites": match.group(4)}
        entry["components"] = match.group(5)
        for option in (match.group(2) or "").split():
            name, _, value = option.partition("=")
            if name == "signed-by":
                entry["signed-by"] = value
        entries.append(entry)
    return entries


def machine_debian_entry() -> dict[str, str]:
    """The machine's sources entry for its own release (not -security, not -updates)."""
    codename = os_codename()
    candidates = []
    etc = Path("/etc/apt")
    files = [etc / "sources.list"] + sorted((etc / "sources.list.d").glob("*"))
    for path in files:
        if not path.is_file():
            continue
        if path.suffix == ".sources":
            candidates += deb822_entries(path.read_text())
        elif path.suffix == ".list" or path.name == "sources.list":
            candidates += one_line_entries(path.read_text())
    for entry in candidates:
        if entry.get("enabled", "yes").lower() == "no":
            continue
        if "deb" in entry.get("types", "").split() and codename in entry.get("suites", "").split():
            return entry
    fail(f"no 'deb' entry for suite {codename} in /etc/apt/sources.list{{,.d/}}")
    raise AssertionError


def cmd_sources() -> None:
    entry = machine_debian_entry()
    codename = os_codename()
    suites = os.environ.get("SPECEXP_DEBIAN_SUITES", "").split() or [
        codename,
        f"{codename}-backports",
        *NEWER_SUITES,
    ]
    suites = list(dict.fromkeys(suites))
    components = entry.get("components", "main").split() or ["main"]
    lines = [
        "Types: deb",
        f"URIs: {entry['uris']}",
        f"Suites: {' '.join(suites)}",
        f"Components: {' '.join(components)}",
    ]
    if entry.get("signed-by"):
        lines.append(f"Signed-By: {entry['signed-by']}")
    print("\n".join(lines))


# --- the apt index -------------------------------------------------------------------------


@dataclass
class Candidate:
    suite: str
    version: str
    depends: list[str]
    homepage: str


@dataclass
class Index:
    packages: dict[str, list[Candidate]] = field(default_factory=dict)
    provides: dict[str, str] = field(default_factory=dict)
    homepages: dict[str, list[str]] = field(default_factory=dict)


def suite_rank(suite: str) -> int:
    return SUITE_PREFERENCE.index(suite) if suite in SUITE_PREFERENCE else len(SUITE_PREFERENCE)


def read_index(index_list: str) -> Index:
    """Go-related stanzas of every Packages index apt downloaded (apt-helper reads .lz4/.gz)."""
    index = Index()
    for line in Path(index_list).read_text().splitlines():
        if not line.strip():
            continue
        filename, suite = line.split("\t")[:2]
        if not Path(filename).exists():  # a suite the mirror does not carry
            continue
        text = subprocess.run(
            [APT_HELPER, "cat-file", filename], check=True, capture_output=True, text=True
        ).stdout
        for stanza in text.split("\n\n"):
            if not stanza.startswith("Package: golang-"):
                continue
            fields = dict(
                (key.lower(), value.strip())
                for key, _, value in (row.partition(":") for row in stanza.splitlines())
                if not key.startswith(" ")
            )
            name = fields["package"]
            depends = [
                re.split(r"[\s(:]", alternative.split("|")[0].strip())[0]
                for alternative in fields.get("depends", "").split(",")
                if alternative.strip()
            ]
            homepage = fields.get("homepage", "")
            index.packages.setdefault(name, []).append(
                Candidate(suite, fields["version"], depends, homepage)
            )
            for provided in fields.get("provides", "").split(","):
                provided = re.split(r"[\s(]", provided.strip())[0]
                if provided:
                    index.provides.setdefault(provided, name)
            if homepage:
                key = normalise_homepage(homepage)
                index.homepages.setdefault(key, [])
                if name not in index.homepages[key]:
                    index.homepages[key].append(name)
    for candidates in index.packages.values():
        candidates.sort(key=lambda c: suite_rank(c.suite))
    return index


def normalise_homepage(url: str) -> str:
    url = url.lower().rstrip("/").replace("http://", "https://")
    return re.sub(r"\.git$", "", url)


# --- versions ------------------------------------------------------------------------------


def debian_upstream(version: str) -> str:
    version = re.sub(r"^\d+:", "", version)  # epoch
    version = re.sub(r"-[^-]+$", "", version)  # Debian revision
    return re.sub(r"[~+](ds|dfsg).*$", "", version)  # repacking suffixes


def debian_key(version: str) -> tuple[int, ...]:
    upstream = debian_upstream(version)
    snapshot = re.match(r"0\.0~git(\d{8})", upstream)
    if snapshot:
        return (0, 0, 0, int(snapshot.group(1)))
    numbers = [int(x) for x in re.findall(r"\d+", upstream.split("~")[0])[:3]]
    return tuple(numbers + [0] * (3 - len(numbers))) + (0,)


def module_key(version: str) -> tuple[int, ...]:
    pseudo = re.match(r"v0\.0\.0-(\d{8})", version)
    if pseudo:
        return (0, 0, 0, int(pseudo.group(1)))
    numbers = [int(x) for x in re.findall(r"\d+", version.split("-")[0])[:3]]
    return tuple(numbers + [0] * (3 - len(numbers))) + (0,)


def closest(candidates: list[Candidate], required: str) -> Candidate:
    """Same major.minor at or above the requirement, else the lowest above it, else the newest."""
    want = module_key(required)
    keyed = sorted(candidates, key=lambda c: debian_key(c.version))  # stable: suite order kept
    above = [c for c in keyed if debian_key(c.version) >= want]
    same_minor = [c for c in above if debian_key(c.version)[:2] == want[:2]]
    return (same_minor or above or keyed[-1:])[0]


# --- go.mod --------------------------------------------------------------------------------


def read_gomod(path: str) -> tuple[str, list[tuple[str, str]]]:
    """go.mod's go version and its required modules, in order."""
    text = Path(path).read_text()
    go_line = re.search(r"^go\s+(\S+)", text, re.M)
    requires = []
    in_block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith("require ("):
            in_block = True
            continue
        if in_block and line == ")":
            in_block = False
            continue
        match = re.match(r"^(?:require\s+)?(\S+)\s+(v\S+)$", line)
        if match and (in_block or line.startswith("require ")):
            requires.append((match.group(1), match.group(2)))
    return (go_line.group(1) if go_line else "1.21"), requires


def name_candidates(module: str, index: Index) -> list[str]:
    """Debian's naming rules for a module path, then packages whose homepage is the module."""
    parts = module.lower().split("/")
    host = HOST_WORDS.get(parts[0], parts[0].replace(".", "-"))
    rest = parts[1:]
    base = "-".join([host, *rest]).replace("_", "-")
    names = [f"golang-{base}-dev", f"golang-{base.replace('.', '-')}-dev"]
    if re.fullmatch(r"v\d+", rest[-1] if rest else ""):
        short = "-".join([host, *rest[:-1]]).replace("_", "-")
        names += [f"golang-{short}-{rest[-1]}-dev", f"golang-{short}.{rest[-1]}-dev"]
        names.append(f"golang-{short}-dev")
    for url in (f"https://{module.lower()}", f"https://{re.sub(r'/v[0-9]+$', '', module.lower())}"):
        names += index.homepages.get(url, [])
    return [name for name in dict.fromkeys(names) if name in index.packages]


# --- subcommands ---------------------------------------------------------------------------


def cmd_toolchain(gomod: str, index_list: str) -> None:
    go_version, _ = read_gomod(gomod)
    need = tuple(int(x) for x in go_version.split(".")[:2])
    index = read_index(index_list)
    found = []
    for name, candidates in index.packages.items():
        match = re.fullmatch(r"golang-(1\.(\d+))-go", name)
        src = f"golang-{match.group(1)}-src" if match else ""
        if match and (1, int(match.group(2))) >= need and src in index.packages:
            go = candidates[0]
            same = [c for c in index.packages[src] if c.version == go.version]
            if same:
                found.append(((1, int(match.group(2))), name, src, go.version))
    if not found:
        fail(f"no golang-1.N-go >= {go_version} in suites {sorted(suite_names(index))}")
    _, go_pkg, src_pkg, version = max(found)
    print(f"{go_pkg}={version} {src_pkg}={version} {debian_upstream(version)}")


def suite_names(index: Index) -> set[str]:
    return {c.suite for candidates in index.packages.values() for c in candidates}


def cmd_select(gomod: str, index_list: str, out_tsv: str) -> None:
    """Write MODULE REQUIRED PACKAGE SUITE VERSION rows, then print every pkg=version to fetch."""
    index = read_index(index_list)
    _, requires = read_gomod(gomod)
    rows = []
    chosen: dict[str, Candidate] = {}
    for module, required in requires:
        names = [MANUAL_PACKAGES[module]] if module in MANUAL_PACKAGES else []
        names += name_candidates(module, index)
        names = [n for n in names if n in index.packages]
        if not names:
            rows.append((module, required, "-", "-", "-"))
            continue
        package = names[0]
        pick = chosen.get(package) or closest(index.packages[package], required)
        chosen[package] = pick
        rows.append((module, required, package, pick.suite, pick.version))
    # What Debian's chosen versions import themselves: follow Depends on golang-*-dev packages,
    # from the dependent's own suite where it has one (the versions Debian built them against).
    queue = list(chosen)
    while queue:
        package = queue.pop(0)
        for name in chosen[package].depends:
            real = name if name in index.packages else index.provides.get(name, "")
            if not re.fullmatch(r"golang-.+-dev", real) or real in chosen:
                continue
            candidates = index.packages[real]
            same_suite = [c for c in candidates if c.suite == chosen[package].suite]
            newest = sorted(candidates, key=lambda c: debian_key(c.version))[-1]
            pick = chosen[real] = same_suite[0] if same_suite else newest
            rows.append(("+", "-", real, pick.suite, pick.version))
            queue.append(real)
    with open(out_tsv, "w") as out:
        for row in rows:
            out.write("\t".join(row) + "\n")
    for package, pick in chosen.items():
        print(f"{package}={pick.version}")


def deb_package_name(deb: Path) -> str:
    return deb.name.split("_", 1)[0]


def package_module_roots(deb: Path, debroot: Path) -> list[tuple[str, str]]:
    """(module path, directory under gocode/src) for each Go module a .deb holds."""
    listing = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], check=True, capture_output=True
    ).stdout
    names = [n for n in tar_names(listing) if n.startswith(GOCODE + "/")]
    relative = [n[len(GOCODE) + 1 :] for n in names]
    roots = []
    for name in relative:
        if name.endswith("/go.mod") and "/vendor/" not in name and "/testdata/" not in name:
            directory = name[: -len("/go.mod")]
            text = (debroot / GOCODE / name).read_text(errors="replace")
            declared = re.search(r"^module\s+\"?([^\s\"]+)", text, re.M)
            roots.append((declared.group(1) if declared else directory, directory))
    if roots:
        return roots
    # No go.mod (older packaging): the deepest directory holding all its Go files.
    go_dirs = [os.path.dirname(n) for n in relative if n.endswith(".go")]
    if not go_dirs:
        return []
    common = os.path.commonpath(go_dirs)
    minimum = 3 if common.split("/")[0] in ("github.com", "gitlab.com", "golang.org") else 2
    if len(common.split("/")) >= minimum:
        return [(common, common)]
    tops = {"/".join(d.split("/")[:minimum]) for d in go_dirs}
    return [(top, top) for top in sorted(tops)]


def tar_names(data: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        return [m.name.removeprefix("./").rstrip("/") for m in archive.getmembers()]


def copy_module(source: Path | None, target: Path, module: str, go_version: str) -> None:
    """Copy a module's tree (links followed, tests left out); None writes an empty stub."""
    if target.exists():
        shutil.rmtree(target)
    if source is None:
        target.mkdir(parents=True)
    else:
        shutil.copytree(
            source.resolve(),
            target,
            symlinks=False,
            ignore_dangling_symlinks=True,
            ignore=shutil.ignore_patterns("testdata", "*_test.go"),
        )
    original = target / "go.mod"
    if original.exists():
        declared = re.search(r"^go\s+(\S+)", original.read_text(errors="replace"), re.M)
        go_version = declared.group(1) if declared else go_version
    # A bare go.mod: its requirements are resolved against the replace lines of the main module.
    original.write_text(f"module {module}\n\ngo {go_version}\n")


def rewrite_imports(tree: Path, old: str, new: str) -> None:
    for path in tree.rglob("*.go"):
        text = path.read_text(errors="replace")
        if f'"{old}' in text:
            path.write_text(text.replace(f'"{old}', f'"{new}'))


def cmd_modules(gomod: str, selection: str, debs: str, debroot: str, mods: str) -> None:
    root = Path(debroot)
    src = root / GOCODE
    mods_dir = Path(mods)
    if mods_dir.exists():
        shutil.rmtree(mods_dir)
    mods_dir.mkdir(parents=True)
    go_version = "1.21"

    wanted = []  # (module, package) from go.mod, in order
    for line in Path(selection).read_text().splitlines():
        module, _required, package = line.split("\t")[:3]
        if module != "+":
            wanted.append((module, package))

    roots: dict[str, list[tuple[str, str]]] = {}
    for deb in sorted(Path(debs).glob("*.deb")):
        roots[deb_package_name(deb)] = package_module_roots(deb, root)

    sources: dict[str, Path | None] = {}  # module -> directory (None: stub)
    origin: dict[str, str] = {}
    for module, package in wanted:
        directory = None
        if package != "-":
            upstream = SUBSTITUTES.get(module, module)
            by_declared = {m: d for m, d in roots.get(package, [])}
            for guess in (
                by_declared.get(upstream),
                upstream,
                re.sub(r"/v\d+$", "", upstream),
            ):
                if guess and (src / guess).is_dir():
                    directory = src / guess
                    break
        sources[module] = directory
        origin[module] = package if directory else "stub"
    # Modules the packages hold beyond go.mod's (Debian's versions import other modules).
    for package, package_roots in roots.items():
        for module, directory in package_roots:
            if module not in sources and (src / directory).is_dir():
                sources[module] = src / directory
                origin[module] = package

    replaces = []
    for module, directory in sources.items():
        target = mods_dir / module.replace("/", "+")
        copy_module(directory, target, module, go_version)
        upstream = SUBSTITUTES.get(module)
        if upstream and directory:
            rewrite_imports(target, upstream, module)
        replaces.append(f"replace {module} => {target.resolve()}")
        print(f"{module}\t{origin[module]}", file=sys.stderr)

    with open(gomod, "a") as out:
        out.write("\n" + "\n".join(replaces) + "\n")
    stubs = [m for m, d in sources.items() if d is None]
    print(
        f"ollama_modules: {len(sources) - len(stubs)} modules from Debian, "
        f"{len(stubs)} empty stubs: {' '.join(stubs)}",
        file=sys.stderr,
    )


def main(argv: list[str]) -> None:
    commands = {
        "sources": (cmd_sources, 0),
        "toolchain": (cmd_toolchain, 2),
        "select": (cmd_select, 3),
        "modules": (cmd_modules, 5),
    }
    if not argv or argv[0] not in commands or len(argv) - 1 != commands[argv[0]][1]:
        fail("usage: see the docstring of scripts/ollama_modules.py")
    function, _ = commands[argv[0]]
    function(*argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
