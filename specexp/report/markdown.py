"""measurements.md from result records, through templates/measurements.md.j2."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import jinja2

from specexp.report.blocks import Chart, CodeBlock, Heading, Paragraph, TableBlock
from specexp.report.build import Report
from specexp.report.format import code, markdown
from specexp.spec import paths

KINDS = {
    Heading: "heading",
    Paragraph: "paragraph",
    TableBlock: "table",
    Chart: "chart",
    CodeBlock: "code",
}


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(paths.templates_dir())),
        autoescape=False,  # Markdown: _view escapes every value that is not Markdown already
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def view_of(report: Report) -> dict[str, Any]:
    """The report's blocks as the template lays them out. Every string is escaped here unless it
    is `Markdown` already (written by specexp, its values escaped when it was written)."""
    blocks = []
    for block in report.blocks:
        data = {f.name: getattr(block, f.name) for f in fields(block)}  # shallow: tables are big
        data["kind"] = KINDS[type(block)]
        if isinstance(block, (Heading, Paragraph)):
            data["text"] = markdown(block.text)
        if isinstance(block, Chart):
            data["title"] = markdown(block.title)
        if isinstance(block, CodeBlock):
            data["text"] = code(block.text)
        if isinstance(block, TableBlock):
            align = list(block.align) or ["l"] * len(block.headers)
            keep = _kept_columns(block)
            data["headers"] = [markdown(block.headers[i]) for i in keep]
            data["rows"] = [[markdown(r[i]) for i in keep] for r in block.rows]
            data["align"] = [align[i] for i in keep]
            data["caption"] = None if block.caption is None else markdown(block.caption)
        blocks.append(data)
    banner = None if report.banner is None else markdown(report.banner)
    return {"banner": banner, "title": markdown(report.title), "blocks": blocks}


OPTIONAL_COLUMNS = ("identical", "vs best")
"""Columns left out of a table when no row has a value in them."""


def _kept_columns(table: TableBlock) -> list[int]:
    return [
        i
        for i, h in enumerate(table.headers)
        if h not in OPTIONAL_COLUMNS or any(r[i] != "—" for r in table.rows)
    ]


def render_markdown(report: Report, view: dict[str, Any] | None = None) -> str:
    """measurements.md of `report` (from its `view_of`, where the caller has it already)."""
    return _render(view if view is not None else view_of(report))


TABLE_MARK = "SPECEXPTABLE{:06d}"
"""A table's stand-in in `with_tables_apart`: one word, a paragraph of its own."""


def with_tables_apart(view: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A report's Markdown (from its `view_of`) with each table left out, a `TABLE_MARK` paragraph
    in its place, and the tables as the template would lay them out (headers, rows, align): the
    HTML report renders a table's cells itself, the largest part of a big report's Markdown."""
    tables, blocks = [], []
    for block in view["blocks"]:
        if block["kind"] == "table":
            tables.append(block)
            block = {"kind": "paragraph", "text": TABLE_MARK.format(len(tables) - 1)}
        blocks.append(block)
    return _render({**view, "blocks": blocks}), tables


def _render(view: dict[str, Any]) -> str:
    text = environment().get_template("measurements.md.j2").render(report=view)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text
