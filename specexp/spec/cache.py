"""specexp's cache of expensive builds and generated files: ~/.cache/specexp (or $SPECEXP_CACHE)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    return Path(os.environ.get("SPECEXP_CACHE") or Path.home() / ".cache" / "specexp")
