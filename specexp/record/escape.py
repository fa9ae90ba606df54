"""Text from a server, a log, a config or a cited file, made safe for Markdown.

The one escaper of every Markdown specexp writes (measurements.md, the checker's report, and
the HTML rendered from them): escaped text cannot end a table cell, open a link, an image,
a code span, bold or raw HTML (an underscore inside a word emphasises nothing).
"""

from __future__ import annotations

from typing import Any

_SPECIAL = "`[]<>*"


def cell(text: Any) -> str:
    """`text` safe inside a Markdown table cell or paragraph, on one line."""
    s = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for ch in _SPECIAL:
        s = s.replace(ch, "\\" + ch)
    return s


def code_span(text: Any) -> str:
    """`text` as an inline code span (backticks and pipes cannot escape it)."""
    return "`" + str(text).replace("`", "'").replace("|", "/").replace("\r", " ").replace("\n", " ") + "`"


def code(text: Any) -> str:
    """Text for a fenced code block: the fence itself cannot be closed from inside."""
    return str(text).replace("```", "'''")
