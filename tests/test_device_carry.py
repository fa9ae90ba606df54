"""What a device call carries: the repository's tracked files and one piece of an engine's stage
(benchmarks/gpu/vllm_stage.py, sglang_stage.py), 64 MiB at most a call (the lent machines' limit).
A repository that grows past what the pieces leave room for makes every carry of a sitting fail."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.gpu import sglang_stage, vllm_stage

REPO = Path(__file__).resolve().parents[1]
CALL_BYTES = 64 << 20
MARGIN = 2 << 20
"""Room for the untracked files a session adds before it commits (a new record, a report)."""


def tracked_bytes() -> int:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    return sum(
        (REPO / n.decode()).stat().st_size for n in names if n and (REPO / n.decode()).is_file()
    )


@pytest.mark.parametrize("stage", [vllm_stage, sglang_stage], ids=["vllm", "sglang"])
def test_one_piece_and_the_repository_fit_in_one_device_call(stage) -> None:
    size = tracked_bytes()
    assert size + stage.PIECE_BYTES + MARGIN <= CALL_BYTES, (
        f"{size >> 20} MiB tracked + {stage.PIECE_BYTES >> 20} MiB a piece: lower "
        f"{stage.__name__}.PIECE_BYTES or move large files out of the repository"
    )


def test_pieces_join_back_to_the_archive_and_a_wrong_piece_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "site.tar.xz"
    archive.write_bytes(bytes(range(256)) * 40)  # 10,240 bytes
    digest, count = vllm_stage.split_into_pieces(archive, tmp_path / "out", piece_bytes=4096)
    assert count == 3 and (tmp_path / "out" / "SHA256").read_text().split() == [
        digest,
        "site.tar.xz",
    ]
    parts, blob = vllm_stage.join_pieces(tmp_path / "out", digest)
    assert blob == archive.read_bytes() and [p.name for p in parts] == [
        "piece-0",
        "piece-1",
        "piece-2",
    ]
    (tmp_path / "out" / "piece-1").write_bytes(b"x" * 4096)
    with pytest.raises(SystemExit, match="join to sha256"):
        vllm_stage.join_pieces(tmp_path / "out", digest)
