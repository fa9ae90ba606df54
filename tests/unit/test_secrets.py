"""A user name or password in a URL is refused before anything is written: exit 2, one line naming
the key and runtime.api_key_env, the password masked; it reaches no file and no terminal."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Cli = Callable[..., subprocess.CompletedProcess[str]]
SECRET = "S3CRET"
URL = f"http://alice:{SECRET}@127.0.0.1:9"  # the discard port: nothing answers there


def _refused_unseen(proc: subprocess.CompletedProcess[str], root: Path) -> str:
    """The one line of the refusal, after checking the secret is nowhere under `root` and in
    neither stream."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    written = [p for p in root.rglob("*") if SECRET in p.name]
    written += [p for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not written, written
    return lines[0]


@pytest.mark.parametrize(
    "mode",
    [
        ["hydra.run.dir={out}"],
        ["-m", "hydra.sweep.dir={out}"],
        ["--config-dir", "{root}/mine", "hydra.run.dir={out}"],  # Hydra writes .hydra/ first
    ],
    ids=["single", "sweep", "hydra-run"],
)
def test_a_password_in_runtime_url_is_refused_before_anything_is_written(
    specexp_cli: Cli, tmp_path: Path, mode: list[str]
) -> None:
    (tmp_path / "mine").mkdir()
    args = [a.format(out=tmp_path / "out", root=tmp_path) for a in mode]
    proc = specexp_cli(*args, "runtime=openai", f"runtime.url={URL}/v1", cwd=tmp_path)
    line = _refused_unseen(proc, tmp_path)
    assert line.startswith("specexp: override runtime.url=") and "runtime.api_key_env" in line
    assert "alice" in line and "***@127.0.0.1" in line  # which URL, its password masked
    assert not (tmp_path / "out").exists()


def test_a_token_in_a_config_files_url_is_refused_naming_the_file(
    specexp_cli: Cli, tmp_path: Path
) -> None:
    mine = tmp_path / "mine" / "runtime"
    mine.mkdir(parents=True)
    (mine / "endpoint.yaml").write_text(
        f"defaults:\n  - openai\n  - _self_\nurl: https://{SECRET}@example.invalid/v1\n",
        encoding="utf-8",
    )
    for mode in (["hydra.run.dir={out}"], ["-m", "hydra.sweep.dir={out}"]):
        args = [a.format(out=tmp_path / "out") for a in mode]
        proc = specexp_cli(
            "--config-dir", str(tmp_path / "mine"), *args, "runtime=endpoint", cwd=tmp_path
        )
        line = _refused_unseen(proc, tmp_path / "out")
        assert f"{mine / 'endpoint.yaml'}: runtime.url:" in line, line
        assert not (tmp_path / "out").exists()


def test_any_refusal_that_quotes_such_a_url_masks_its_password(
    specexp_cli: Cli, tmp_path: Path
) -> None:
    proc = specexp_cli(
        f"hydra.run.dir={tmp_path / 'out'}", "runtime=openai", f"runtime.urll={URL}", cwd=tmp_path
    )
    line = _refused_unseen(proc, tmp_path)
    assert "runtime.urll=http://alice:***@127.0.0.1:9" in line and "did you mean 'url'?" in line
