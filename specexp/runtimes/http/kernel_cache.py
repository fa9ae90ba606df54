"""Triton's kernel cache, read around a window: the kernels a server compiled while it was timed.

Triton compiles a kernel the first time it meets a new specialisation of it (the argument types, which
integers are divisible by 16, and the value of every `tl.constexpr`) and keeps the result in its file
cache: `TRITON_CACHE_DIR`, else `.triton/cache` under `TRITON_HOME`, else under the home folder. A
compile creates a folder there named by the specialisation's hash, holding `__grp__<kernel>.json`; a
kernel found in the cache creates nothing. So the folders that appear while a window runs are the
kernels compiled inside it, whether or not the engine's log says so (SGLang's does not: a Gated
DeltaNet prefill compiles a kernel for each new number of tokens, docs/engines.md section 2.5).

Only a server specexp started on this machine is watched (its environment says where the cache is).
Another process compiling into the same cache during the window is counted too; a server whose
`runtime.executable` runs it in a container of its own file system compiles where this cannot see, and
its windows read as clean.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

GROUP = re.compile(r"^__grp__([A-Za-z_][A-Za-z0-9_]{0,120})\.json$")
"""The group file a compile writes (`FileCacheManager.put_group`): its kernel's name."""
SHOWN_CHARS = 12
"""How much of a cache folder's hash a line shows."""
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class WindowMark(NamedTuple):
    """Where a window began: the size of the server's log, and its kernel cache's folders (None
    where that one is not read)."""

    log: int | None
    kernels: frozenset[str] | None


def read_for_compiles(mark: object | None) -> tuple[str, ...]:
    """What a window whose runtime gave `mark` (Runtime.log_mark) reads for its compiles."""
    if isinstance(mark, WindowMark):
        return (
            *(["log"] if mark.log is not None else []),
            *(["kernel_cache"] if mark.kernels is not None else []),
        )
    return ("log",) if mark is not None else ()


@dataclass(frozen=True)
class KernelCache:
    """The Triton cache folder of one server."""

    folder: Path

    @classmethod
    def of_server(cls, env: Mapping[str, str]) -> KernelCache:
        """Where a server with environment `env` keeps its kernels (Triton's own order of choice)."""
        if env.get("TRITON_CACHE_DIR"):
            return cls(Path(env["TRITON_CACHE_DIR"]).expanduser())
        home = env.get("TRITON_HOME") or env.get("HOME") or str(Path.home())
        return cls(Path(home).expanduser() / ".triton" / "cache")

    def entries(self) -> frozenset[str]:
        """The cache's folders now (none where it does not exist yet)."""
        try:
            with os.scandir(self.folder) as found:
                return frozenset(e.name for e in found if e.is_dir(follow_symlinks=False))
        except OSError:
            return frozenset()

    def compiled_since(self, before: frozenset[str]) -> tuple[str, ...]:
        """One line for each folder that appeared since `before`, naming the kernel compiled."""
        return tuple(self.describe(name) for name in sorted(self.entries() - before))

    def describe(self, name: str) -> str:
        try:
            files = sorted(os.listdir(self.folder / name))
        except OSError:
            files = []
        kernels = [m.group(1) for m in map(GROUP.match, files) if m]
        what = ", ".join(kernels) if kernels else "a kernel or its launcher"
        shown = UNSAFE.sub("", name)[:SHOWN_CHARS]
        return f"Triton compiled {what} during the window (kernel cache {shown})"
