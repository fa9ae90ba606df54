"""Everything specexp writes in a sweep folder has the mode any file the user writes has (0666 less
the umask): records are not private while the sweep's multirun.yaml is shared, or the reverse."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

Cli = Callable[..., subprocess.CompletedProcess[str]]


def test_records_reports_and_configs_of_a_sweep_share_one_mode(
    specexp_cli: Cli, tmp_path: Path
) -> None:
    sweep = tmp_path / "sweep"
    umask = os.umask(0o022)
    os.umask(umask)
    proc = specexp_cli("-m", "workload.output_tokens=8", f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 0, proc.stderr
    (result,) = sweep.rglob("result.json")
    files = [result, sweep / "multirun.yaml", sweep / "results.jsonl", sweep / "measurements.md"]
    modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    assert set(modes.values()) == {0o666 & ~umask}, {k: oct(v) for k, v in modes.items()}
