"""One escaper for every Markdown specexp writes: a hostile string from a server or a cited
file cannot open a link, an image or raw HTML in the report or in the checker's output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from markdown_it import MarkdownIt

from specexp.check import check, load_figures, render_md
from specexp.record import find_records
from specexp.record.escape import cell
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"
HOSTILE = [
    '<script>alert("x")</script>',
    "[click](javascript:alert(1))",
    "![x](http://127.0.0.1:9/pixel.png)",
    "<img src=x onerror=alert(2)>",
    "`code` | pipe **bold**",
    "<https://example.invalid/autolink>",
]


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)


def _assert_inert(html: str) -> None:
    """No script, no link, no image but specexp's own chart files, no markup from the text."""
    assert "<script" not in html and "<a " not in html, html
    assert all(
        src.startswith("charts/")
        for src in (p.split('"', 1)[0] for p in html.split('<img src="')[1:])
    )
    assert (
        "<img src=x" not in html
        and "<strong>bold</strong>" not in html
        and "<code>code</code>" not in html
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_an_escaped_cell_renders_as_the_text_itself(text: str) -> None:
    html = _html(f"| a |\n|---|\n| {cell(text)} |\n")
    _assert_inert(html)
    assert html.count("<td>") == 1  # the pipe did not split the cell


def test_the_checkers_markdown_keeps_cited_text_inert(tmp_path: Path) -> None:
    hostile = " ".join(HOSTILE)
    path = tmp_path / "figures.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "figures": {
                    "a": {
                        "value": 20.0,
                        "unit": "tok/s",
                        "metric": "e2e_tps",
                        "source": hostile,
                        "note": hostile,
                        "conditions": {
                            "hardware": "h200",
                            "drafter": "mtp",
                            "k": 3,
                            "runtime_version": hostile,
                        },
                    },
                    "b": {
                        "value": 30.0,
                        "unit": "tok/s",
                        "metric": "e2e_tps",
                        "source": hostile,
                        "conditions": {"hardware": "h200", "drafter": "dspark", "k": 7},
                    },
                },
                "comparisons": [{"figures": ["a", "b"], "vary": ["drafter"]}],
            }
        )
    )
    markdown = render_md(check(load_figures(path)))
    assert "onerror" in markdown  # the text is there, only escaped
    _assert_inert(_html(markdown))


def test_the_report_keeps_server_text_inert(tmp_path: Path) -> None:
    hostile = " ".join(HOSTILE)
    shutil.copytree(FIXTURES / "refused", tmp_path / "refused")
    path = next((tmp_path / "refused").rglob("result.json"))
    record = json.loads(path.read_text())
    record["error"]["message"] = hostile
    record["conditions"]["runtime_version"] = hostile
    path.write_text(json.dumps(record))
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    markdown = render_markdown(build_report(find_records([tmp_path]), tmp_path))
    assert "onerror" in markdown
    html = _html(markdown)
    assert (
        "<script" not in html and "<img src=x" not in html and "<strong>bold</strong>" not in html
    )
    links = [part.split('"', 1)[0] for part in html.split('href="')[1:]]
    assert all(link.endswith("result.json") or link.startswith("#") for link in links), (
        links
    )  # only specexp's own record links
