"""Charts to SVG files, and the HTML report: the Markdown rendered with markdown-it (raw HTML
off, so any text from a server arrives escaped) and its charts drawn by an inlined vega-embed."""

from __future__ import annotations

import html
import importlib.metadata
import json
import re
from functools import lru_cache
from pathlib import Path

import vl_convert
from markdown_it import MarkdownIt

from specexp.record import atomic_write
from specexp.report.build import Report
from specexp.report.links import anchor
from specexp.report.markdown import environment, render_markdown
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
    bundle = vl_convert.javascript_bundle().replace("</script", "<\\/script")
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


def render_html(report: Report) -> str:
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = markdown.render(render_markdown(report))
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
            bundle=vega_bundle() if report.charts else "",
            specs=specs,
        )
    )


def write_html(report: Report, out: Path) -> Path:
    atomic_write(out, render_html(report))
    return out
