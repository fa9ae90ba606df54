"""Charts to SVG files, and the HTML report: the Markdown rendered with markdown-it (raw HTML
off, so any text from a server arrives escaped) and its charts drawn by an inlined vega-embed."""

from __future__ import annotations

import html
import importlib.metadata
import json
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import vl_convert
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

from specexp.record import atomic_write
from specexp.report.build import Report
from specexp.report.links import anchor
from specexp.report.markdown import environment, view_of, with_tables_apart
from specexp.spec.cache import cache_dir

_IMG = re.compile(r'<p><img src="charts/([A-Za-z0-9_.-]+)\.svg" alt="[^"<>]*" ?/?></p>')


SVG_CONFIG = {"font": "DejaVu Sans"}
"""The SVGs' text in one named font, so that vl-convert measures the same text widths on every machine
that has it (Debian's base image does: fonts-dejavu-core), whatever else is installed: `sans-serif`
resolved to Liberation Sans once Chromium's fonts came in, and every chart moved by a pixel."""


def write_charts(report: Report, folder: Path) -> list[Path]:
    """One SVG per chart, for the Markdown report (rendered offline by vl-convert)."""
    written = []
    for chart in report.charts:
        path = folder / f"{chart.name}.svg"
        atomic_write(path, vl_convert.vegalite_to_svg(chart.spec, config=SVG_CONFIG))
        written.append(path)
    return written


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """vega, vega-lite and vega-embed in one script, so the HTML needs no network. Building it
    takes vl-convert ~1.5 s, so it is kept in specexp's cache per vl-convert version."""
    path = (
        cache_dir() / f"vega-bundle-vl-convert-{importlib.metadata.version('vl-convert-python')}.js"
    )
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    # vl-convert's stub makes the snippet required; without one it bundles its default
    bundle_of: Callable[..., str] = vl_convert.javascript_bundle
    bundle = bundle_of().replace("</script", "<\\/script")
    try:
        atomic_write(path, bundle)
    except OSError:
        pass  # an unwritable cache costs time, not the report
    return bundle


_HEADING = re.compile(r"<h([23])>(.*?)</h\1>")
_SHARED = re.compile(
    r"<p>(Conditions shared by every figure on this page[^<]*)</p>\s*(<table>.*?</table>)", re.S
)


def _heading_ids(body: str) -> str:
    """Each section and table heading gets the id GitHub gives it, so findings link to tables."""
    seen: dict[str, int] = {}

    def add(m: re.Match[str]) -> str:
        slug = anchor(html.unescape(re.sub(r"<[^>]+>", "", m.group(2))))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        return f'<h{m.group(1)} id="{slug}{f"-{n}" if n else ""}">{m.group(2)}</h{m.group(1)}>'

    return _HEADING.sub(add, body)


_PLAIN = re.compile(r"(?:[^\\`*_\[\]<>&!~|]|(?<=[A-Za-z0-9])_+(?=[A-Za-z0-9]))*")
"""Text with none of Markdown's inline syntax (an underscore inside a word is none: it cannot
open or close emphasis), and nothing to escape in HTML but quotes."""
_CODE = re.compile(r"`([A-Za-z0-9_.:/=,#+-]+)`")
"""A code span of a name (`hardware`, a run id)."""
_LINK = re.compile(r"\[([^\[\]\\]*)\]\(([A-Za-z0-9_.,=/#%+-]*)\)")
"""A link to a relative path (a run's result.json)."""


def _inline(markdown: MarkdownIt, text: str) -> str | None:
    """Text as markdown-it renders it inline, where it is plain, a name's code span or a link of
    those to a relative path: without parsing it (most of a big report's cells); else None."""
    if _PLAIN.fullmatch(text):
        return text.replace('"', "&quot;")
    if code := _CODE.fullmatch(text):
        return f"<code>{code[1]}</code>"
    if (link := _LINK.fullmatch(text)) and (inner := _inline(markdown, link[1])) is not None:
        return f'<a href="{escapeHtml(markdown.normalizeLink(link[2]))}">{inner}</a>'
    return None


def _cell(markdown: MarkdownIt, text: str) -> str:
    """A table cell's Markdown as markdown-it renders it."""
    text = text.strip()
    fast = _inline(markdown, text)
    return fast if fast is not None else markdown.renderInline(text)


def _table(markdown: MarkdownIt, table: dict[str, Any]) -> str:
    """A table as markdown-it's table rule renders it, cell by cell."""
    styles = [' style="text-align:right"' if a == "r" else "" for a in table["align"]]

    def row(cells: list[str], tag: str) -> str:
        inner = "".join(
            f"<{tag}{s}>{_cell(markdown, c)}</{tag}>\n" for c, s in zip(cells, styles, strict=True)
        )
        return f"<tr>\n{inner}</tr>\n"

    out = ["<table>\n<thead>\n", row(table["headers"], "th"), "</thead>\n"]
    if table["rows"]:
        out += ["<tbody>\n", *(row(r, "td") for r in table["rows"]), "</tbody>\n"]
    return "".join([*out, "</table>\n"])


def render_html(
    report: Report, view: dict[str, Any] | None = None, vega_script: str | None = None
) -> str:
    """The HTML report of `report`: its Markdown rendered by markdown-it, the tables cell by cell
    (a report of thousands of runs has tables of thousands of rows; tests/unit/report/test_html.py
    holds the result equal to markdown-it's rendering of the whole measurements.md). Its charts'
    scripts are inlined, or loaded from `vega_script` (a path relative to the page, or a URL)
    where reports share one copy (`vega_bundle()` written there)."""
    return _page(report, markdown_body(report, view), vega_script)


def markdown_body(report: Report, view: dict[str, Any] | None = None) -> str:
    """measurements.md as markdown-it renders it (raw HTML off), its tables cell by cell."""
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    text, tables = with_tables_apart(view if view is not None else view_of(report))
    body = markdown.render(text)
    return re.sub(
        r"<p>SPECEXPTABLE(\d{6})</p>\n", lambda m: _table(markdown, tables[int(m[1])]), body
    )


def _page(report: Report, body: str, vega_script: str | None = None) -> str:
    """The HTML page around the rendered Markdown: charts in place of their images, headings with
    ids, the shared conditions folded."""
    body = _IMG.sub(lambda m: f'<div class="chart" id="chart-{m.group(1)}"></div>', body)
    body = _heading_ids(body)
    # the shared conditions are reference, not a finding: folded until asked for
    body = _SHARED.sub(
        lambda m: f"<details><summary>{m.group(1)}</summary>{m.group(2)}</details>", body
    )
    specs = json.dumps({c.name: c.spec for c in report.charts}).replace("</", "<\\/")
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            title=report.title,
            body=body,
            bundle=vega_bundle() if report.charts and not vega_script else "",
            vega_script=vega_script if report.charts else None,
            specs=specs,
        )
    )


def write_html(
    report: Report, out: Path, view: dict[str, Any] | None = None, vega_script: str | None = None
) -> Path:
    atomic_write(out, render_html(report, view, vega_script))
    return out
