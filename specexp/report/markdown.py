"""measurements.md from result records, through templates/measurements.md.j2."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import jinja2

from specexp.spec import paths
from specexp.report.blocks import Chart, CodeBlock, Heading, Paragraph, TableBlock
from specexp.report.build import Report
from specexp.report.format import code

KINDS = {Heading: "heading", Paragraph: "paragraph", TableBlock: "table", Chart: "chart", CodeBlock: "code"}


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(paths.templates_dir())),
        autoescape=False,  # Markdown: text from servers is escaped by specexp.report.format
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _view(report: Report) -> dict[str, Any]:
    blocks = []
    for block in report.blocks:
        data = asdict(block)
        data["kind"] = KINDS[type(block)]
        if isinstance(block, CodeBlock):
            data["text"] = code(block.text)
        if isinstance(block, TableBlock):
            align = list(block.align) or ["l"] * len(block.headers)
            keep = _kept_columns(block)
            data["headers"] = [block.headers[i] for i in keep]
            data["rows"] = [[r[i] for i in keep] for r in block.rows]
            data["align"] = [align[i] for i in keep]
        blocks.append(data)
    return {"banner": report.banner, "title": report.title, "blocks": blocks}


OPTIONAL_COLUMNS = ("identical", "vs best")
"""Columns left out of a table when no row has a value in them."""


def _kept_columns(table: TableBlock) -> list[int]:
    return [
        i for i, h in enumerate(table.headers)
        if h not in OPTIONAL_COLUMNS or any(r[i] != "—" for r in table.rows)
    ]


def render_markdown(report: Report) -> str:
    text = environment().get_template("measurements.md.j2").render(report=_view(report))
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text
