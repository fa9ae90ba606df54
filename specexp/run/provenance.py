"""Provenance collected automatically at record time; a missing fact is None, never a crash."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from specexp import __version__


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@functools.lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The commit of the specexp checkout, when running from a clone (asked once a process)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


class Environment(TypedDict):
    """Where a job ran: the record's provenance fields of that name."""

    specexp_version: str | None
    git_sha: str | None
    python: str | None
    host: str | None
    visible_gpus: str | None


def environment() -> Environment:
    return {
        "specexp_version": __version__,
        "git_sha": git_sha(),
        "python": platform.python_version(),
        "host": platform.node() or None,
        # the GPUs a scheduler gave the job (Ray and SLURM set it): which devices its server used
        "visible_gpus": os.environ.get("CUDA_VISIBLE_DEVICES") or None,
    }
