"""Text from a server, a log, a config or a cited file, made safe for Markdown.

The one escaper of every Markdown specexp writes (measurements.md, the checker's report, and
the HTML rendered from them): escaped text cannot end a table cell, open a link, an image,
a code span, bold, emphasis or raw HTML (an underscore inside a word emphasises nothing, so it
is left as it is).
"""

from __future__ import annotations

import re
from typing import Any

_SPECIAL = "`[]<>*"
_UNDERSCORES = re.compile(r"_+")


def _underscores(match: re.Match[str]) -> str:
    """A run of underscores that could open or close emphasis (`_em_`) escaped; one inside a word
    (edit_heavy, run__id) cannot, and is left as it is."""
    text, start, end = match.string, match.start(), match.end()
    inside = start > 0 and text[start - 1].isalnum() and end < len(text) and text[end].isalnum()
    return match.group() if inside else "\\_" * (end - start)


class Markdown(str):
    """Text that is Markdown already: written by specexp, or escaped. The renderers escape every
    other string they are given, so a value from a server cannot reach a report raw."""

    __slots__ = ()

    def __add__(
        self, other: str
    ) -> str:  # Markdown only if both parts are: a plain part is escaped later
        joined = str.__add__(self, other)
        return Markdown(joined) if isinstance(other, Markdown) else joined

    def join(self, parts: Any) -> Markdown:  # type: ignore[override]
        return Markdown(str.join(self, (markdown(p) for p in parts)))


def markdown(text: Any) -> Markdown:
    """`text` as Markdown: unchanged when it is Markdown already, escaped otherwise."""
    return text if isinstance(text, Markdown) else cell(text)


def cell(text: Any) -> Markdown:
    """`text` safe inside a Markdown table cell or paragraph, on one line."""
    s = _valid(text).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for ch in _SPECIAL:
        s = s.replace(ch, "\\" + ch)
    return Markdown(_UNDERSCORES.sub(_underscores, s))


def code_span(text: Any) -> Markdown:
    """`text` as an inline code span (backticks and pipes cannot escape it)."""
    return Markdown(
        "`"
        + _valid(text).replace("`", "'").replace("|", "/").replace("\r", " ").replace("\n", " ")
        + "`"
    )


def _valid(text: Any) -> str:
    """`text` as a string that encodes as UTF-8: bytes decoded with replacement, lone surrogates
    (invalid UTF-8 read with surrogateescape) replaced."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    s = str(text)
    return s if s.isascii() else s.encode("utf-8", errors="replace").decode("utf-8")


def code(text: Any) -> str:
    """Text for a fenced code block: the fence itself cannot be closed from inside."""
    return _valid(text).replace("```", "'''")


def link(label: Any, target: str) -> Markdown:
    """A Markdown link to a relative path: the label escaped (unless Markdown), the target
    percent-encoded so no character of a folder name can end it."""
    from urllib.parse import quote

    return Markdown(f"[{markdown(label)}]({quote(target, safe='/=,._-~@:+')})")
