"""The report as a list of blocks that both renderers lay out: Markdown and HTML."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str
    """Markdown; anything that came from a server or a log must already be escaped."""


@dataclass(frozen=True)
class TableBlock:
    headers: Sequence[str]
    rows: Sequence[Sequence[str]]
    """Cells: plain text (escaped when rendered) or `Markdown` (a str already escaped)."""
    align: list[str] = field(default_factory=list)
    """Per column: "l" or "r"."""
    caption: str | None = None


@dataclass(frozen=True)
class Chart:
    name: str
    """File stem, unique in the report: charts/<name>.svg."""
    title: str
    spec: dict[str, Any]
    """A Vega-Lite spec (Altair's to_dict()) with its data inlined."""


@dataclass(frozen=True)
class CodeBlock:
    text: str
    language: str = "text"


Block = Heading | Paragraph | TableBlock | Chart | CodeBlock
