"""What a server says reaches a terminal, a Markdown file or a web page as plain text: no escape
sequence retitles the terminal or clears it, no CR LF forges a progress line, no NUL or ESC lands
in measurements.md, and rich markup in an error body is shown, not parsed."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from specexp.record.escape import cell, code, code_span
from specexp.run.progress import SweepProgress
from tests.support.hostile_server import HOSTILE_BODY, MODEL, hostile_server

Cli = Callable[..., subprocess.CompletedProcess[str]]
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Every control character but tab and newline (a terminal's own bar uses ESC: checked apart)."""


class Tty(io.StringIO):
    """A terminal as rich sees one."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with hostile_server() as url:
        yield url


def _no_forged_line(text: str) -> None:
    assert "PWNED-TITLE" not in text and "\x1b]" not in text and "\x1b[2J" not in text
    assert not any(line.startswith("INJECTED-LINE") for line in text.splitlines())


@pytest.mark.parametrize("escape", [cell, code_span])
def test_one_line_markdown_holds_no_control_character(escape: Callable[[str], str]) -> None:
    text = escape(HOSTILE_BODY)
    assert not CONTROL.search(text) and "\n" not in text and "\t" not in text
    assert "INJECTED-LINE ok: fake" in text  # the words are kept


def test_a_log_tail_keeps_its_lines_and_loses_its_control_characters() -> None:
    text = code("line one\r\nline\ttwo\x1b[31m red\x1b[0m\rline three\x00\n" + HOSTILE_BODY)
    assert not CONTROL.search(text)
    assert text.splitlines()[:3] == ["line one", "line\ttwo red", "line three"]


def test_rich_markup_in_a_status_on_a_terminal_is_shown_not_parsed() -> None:
    out = Tty()
    progress = SweepProgress(total=2, stream=out)
    assert progress.live
    progress.started_job("drafter=none")
    progress.finished_job("drafter=none", f"failed (HTTP 500: {HOSTILE_BODY})")
    progress.close()  # a MarkupError here would end the sweep
    shown = out.getvalue()
    assert "[/bold] boom" in shown  # the words as the server sent them
    _no_forged_line(shown)


def test_without_a_terminal_a_hostile_status_is_still_one_line() -> None:
    out = io.StringIO()
    progress = SweepProgress(total=1, stream=out)
    progress.finished_job("drafter=none", f"failed (HTTP 500: {HOSTILE_BODY})")
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and not CONTROL.search(lines[0]), lines
    _no_forged_line(out.getvalue())


@pytest.mark.parametrize("sweep", [False, True], ids=["single", "sweep"])
def test_a_hostile_error_body_reaches_no_terminal_or_report_raw(
    specexp_cli: Cli, server: str, tmp_path: Path, sweep: bool
) -> None:
    out = tmp_path / "out"
    where = ["-m", f"hydra.sweep.dir={out}"] if sweep else [f"hydra.run.dir={out}"]
    proc = specexp_cli(
        *where,
        "runtime=openai",
        f"runtime.url={server}",
        f"runtime.served_model_name={MODEL}",
        "workload.output_tokens=8",
        "workload.repeats=1",
        "workload.warmup=0",
        cwd=tmp_path,
    )
    assert "INJECTED-LINE ok: fake" in proc.stdout, (
        proc.stdout + proc.stderr
    )  # it failed, and says why
    assert not CONTROL.search(proc.stdout + proc.stderr), repr(proc.stdout)
    _no_forged_line(proc.stdout + proc.stderr)
    for name in ("measurements.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        assert "INJECTED-LINE" in text and not CONTROL.search(text), name
        _no_forged_line(text)
