"""Whatever a server reports (its version, its model's name, an error, a log tail) reaches
measurements.md, report.html and the checker's output as text: tables keep their columns, no
link, image or script comes out of it, and nothing runs in a browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from specexp.check.__main__ import main as check_main
from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.report.render import render_html, write_html

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"
PWN = "document.body.setAttribute('data-pwned', 'yes')"
HOSTILE = [
    f"<script>{PWN}</script>",
    "a | b || c",
    "`tick` ``` fence",
    "line one\nline two\r\n| injected | row |",
    "[x](javascript:alert(1)) ![y](http://127.0.0.1:9/p.png) <https://example.invalid/>",
    f'<img src=x onerror="{PWN}"> **bold** _em_ <b>raw</b>',
    "v" * 5000,
    "bad \udcff\udcfe utf-8 \ufffd",  # invalid UTF-8 read with surrogateescape: lone surrogates
]


def _hostile_records(tmp_path: Path) -> Path:
    """The simulated fixtures with a hostile runtime version each (so it is a table column) and a
    hostile model name, and the refused one with a hostile error message and log tail."""
    root = tmp_path / "records"
    shutil.copytree(FIXTURES / "simulated", root / "simulated")
    shutil.copytree(FIXTURES / "refused", root / "refused")
    for i, path in enumerate(sorted((root / "simulated").rglob("result.json"))):
        record = json.loads(path.read_text())
        record["conditions"]["runtime_version"] = HOSTILE[i % len(HOSTILE)] + f" #{i}"
        record["conditions"]["model"] = " ".join(HOSTILE[:6])
        path.write_text(json.dumps(record))
    path = next((root / "refused").rglob("result.json"))
    record = json.loads(path.read_text())
    record["error"] = {
        "kind": "server_exited",
        "message": " ".join(HOSTILE),
        "log_tail": "\n".join(HOSTILE),
    }
    record["conditions"]["runtime_version"] = HOSTILE[0]
    path.write_text(json.dumps(record))
    return root


def _unescaped_pipes(line: str) -> int:
    """Cell separators as a GFM table reads them: a pipe not escaped by a backslash (a pipe inside a
    code span splits the cell too)."""
    count, escaped = 0, False
    for ch in line:
        count += ch == "|" and not escaped
        escaped = ch == "\\" and not escaped
    return count


def _tables_keep_their_columns(markdown: str) -> int:
    """Every row of every table has as many cells as its header; returns the number of tables."""
    tables = 0
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if (
            line.startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\|(-{3,}:?\|)+", lines[i + 1])
        ):
            tables += 1
            width = _unescaped_pipes(line)
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                assert _unescaped_pipes(row) == width, f"a row lost its columns:\n{line}\n{row}"
    return tables


def _inert(html: str) -> None:
    page = html.split("<body>", 1)[-1].split("<script>", 1)[0]  # before specexp's own scripts
    for markup in ("<script", "<b>", "<strong>bold", "<em>em", 'onerror="', "<img src=x"):
        assert markup not in page, (
            f"{markup} from a server got through: ...{page[page.find(markup) - 200 :][:400]}"
        )
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert all(h.endswith("result.json") or h.startswith("#") for h in hrefs), hrefs
    srcs = re.findall(r'src="([^"]*)"', page)
    assert all(s.startswith("charts/") for s in srcs), srcs


def test_hostile_server_text_stays_text_in_markdown_and_html(tmp_path: Path) -> None:
    root = _hostile_records(tmp_path)
    report = build_report(find_records([root]), tmp_path)
    markdown = render_markdown(report)
    assert "onerror" in markdown and "v" * 5000 in markdown  # the text is all there, escaped
    assert _tables_keep_their_columns(markdown) >= 3
    outside_fences = re.sub(r"```text\n.*?\n```", "", markdown, flags=re.S)
    assert "\n| injected | row |" not in outside_fences  # a newline cannot start a row of its own
    markdown.encode("utf-8")  # lone surrogates were replaced, the file can be written
    _inert(MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown))
    html = render_html(report)
    html.encode("utf-8")
    _inert(html)
    fence = markdown.split("```text\n", 1)[1].split("\n```", 1)[
        0
    ]  # the log tail cannot close its fence
    assert "fence" in fence and "```" not in fence


def test_hostile_text_stays_text_in_the_checkers_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _hostile_records(tmp_path)
    figures = tmp_path / "figures.yaml"
    hostile = " ".join(HOSTILE[:6])
    figures.write_text(
        yaml.safe_dump(
            {
                "figures": {
                    "cited": {
                        "value": 20.0,
                        "unit": "tok/s",
                        "metric": "decode_tps",
                        "source": hostile,
                        "note": hostile,
                        "conditions": {
                            "hardware": "h200",
                            "drafter": "mtp",
                            "k": 3,
                            "runtime_version": hostile,
                        },
                    },
                    "other": {
                        "value": 30.0,
                        "unit": "tok/s",
                        "metric": "decode_tps",
                        "source": hostile,
                        "conditions": {"hardware": "h200", "drafter": "dspark", "k": 8},
                    },
                },
                "comparisons": [{"figures": ["cited", "other"], "vary": ["drafter"]}],
            }
        )
    )
    check_main([str(figures), "--against", str(root)])
    markdown = capsys.readouterr().out
    assert "onerror" in markdown
    assert _tables_keep_their_columns(markdown) >= 2
    _inert(MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown))


@pytest.mark.slow
def test_nothing_a_server_said_runs_in_chromium(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    root = _hostile_records(tmp_path)
    page = write_html(build_report(find_records([root]), tmp_path), tmp_path / "report.html")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-sync",
            "--disable-background-networking",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert (
        "<body" in dom and "onerror" in dom
    )  # the page rendered, the hostile text is on it as text
    assert 'data-pwned="yes"' not in dom
