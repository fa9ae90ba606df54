"""Charts to SVG files, and the HTML report: the Markdown rendered with markdown-it (raw HTML
off, so any text from a server arrives escaped) and its charts drawn by an inlined vega-embed."""

from __future__ import annotations

import importlib.metadata
import json
import re
from functools import lru_cache
from pathlib import Path

import vl_convert
from markdown_it import MarkdownIt

from specexp.record import atomic_write
from specexp.report.build import Report
from specexp.report.markdown import environment, render_markdown
from specexp.spec.cache import cache_dir

_IMG = re.compile(r'<p><img src="charts/([A-Za-z0-9_.-]+)\.svg" alt="[^"<>]*" ?/?></p>')


def write_charts(report: Report, folder: Path) -> list[Path]:
    """One SVG per chart, for the Markdown report (rendered offline by vl-convert)."""
    written = []
    for chart in report.charts:
        path = folder / f"{chart.name}.svg"
        atomic_write(path, vl_convert.vegalite_to_svg(chart.spec))
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


def render_html(report: Report) -> str:
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    body = markdown.render(render_markdown(report))
    body = _IMG.sub(lambda m: f'<div class="chart" id="chart-{m.group(1)}"></div>', body)
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
