"""Files and folders written in place of their path atomically: into a sibling temporary, then
renamed over the path, so a reader never sees half a model and a failure leaves nothing behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def new_file(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write; on a clean exit it becomes `path` (mode 0644),
    on an error it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def new_folder(path: Path) -> Iterator[Path]:
    """A temporary folder beside `path` to fill; on a clean exit it replaces `path` (mode 0755),
    on an error it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
