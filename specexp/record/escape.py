"""Text from a server, a log, a config or a cited file, made safe for Markdown.

The one escaper of every Markdown specexp writes (measurements.md, the checker's report, and
the HTML rendered from them): escaped text cannot end a table cell, open a link, an image,
a code span, bold, emphasis or raw HTML (an underscore inside a word emphasises nothing, so it
is left as it is).
"""

from __future__ import annotations

import re
from typing import Any, overload

from specexp.record.writable import encodable

_SPECIAL = "`[]<>*"
_UNDERSCORES = re.compile(r"_+")
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: a colour, a cursor move, a screen clear
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC: a title
    r"|\x1b[ -/]*[0-~]"  # any other escape sequence
)
_LINE_BREAK = re.compile(r"\r\n|[\t\n\v\f\r\x85\u2028\u2029]")
_NEWLINE = re.compile(r"\r\n?|[\v\f\x85\u2028\u2029]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_INERT = re.compile(r"[^\x00-\x1f\x7f-\x9f\\|`\[\]<>*_\u2028\u2029\ud800-\udfff]*")
"""Text `cell` leaves as it is: nothing to drop, join or escape (most of a table's cells)."""


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

    @overload
    def __add__(self, other: Markdown) -> Markdown: ...
    @overload
    def __add__(self, other: str) -> str: ...
    def __add__(
        self, other: str
    ) -> str:  # Markdown only if both parts are: a plain part is escaped later
        joined = str.__add__(self, other)
        return Markdown(joined) if isinstance(other, Markdown) else joined

    def join(self, parts: Any) -> Markdown:
        return Markdown(str.join(self, (markdown(p) for p in parts)))


def markdown(text: Any) -> Markdown:
    """`text` as Markdown: unchanged when it is Markdown already, escaped otherwise."""
    return text if isinstance(text, Markdown) else cell(text)


def printable(text: Any, lines: bool = False) -> str:
    """`text` as a terminal, a Markdown file or a web page may show it: no escape sequence (a
    colour, a cursor move, a window title), no other control character (C0, DEL, C1), so a
    server's words cannot forge a line or retitle a terminal. On one line, each line break or
    tab becomes a space; with `lines`, line breaks are kept as newlines, and tabs as they are."""
    s = _ESCAPE_SEQUENCE.sub("", _valid(text))
    s = _NEWLINE.sub("\n", s) if lines else _LINE_BREAK.sub(" ", s)
    return _CONTROL.sub("", s)


def cell(text: Any) -> Markdown:
    """`text` safe inside a Markdown table cell or paragraph, on one line."""
    if isinstance(text, str) and _INERT.fullmatch(text):
        return Markdown(text)
    s = printable(text).replace("\\", "\\\\").replace("|", "\\|")
    for ch in _SPECIAL:
        s = s.replace(ch, "\\" + ch)
    return Markdown(_UNDERSCORES.sub(_underscores, s))


def code_span(text: Any) -> Markdown:
    """`text` as an inline code span (backticks and pipes cannot escape it)."""
    return Markdown("`" + printable(text).replace("`", "'").replace("|", "/") + "`")


def _valid(text: Any) -> str:
    """`text` as a string that encodes as UTF-8: bytes decoded with replacement, a surrogate pair
    joined and a lone surrogate replaced (specexp.record.writable.encodable)."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    return encodable(str(text))


def code(text: Any) -> str:
    """Text for a fenced code block (a server's log tail): its lines kept, its control characters
    dropped (`printable`), and the fence itself cannot be closed from inside."""
    return printable(text, lines=True).replace("```", "'''")


def link(label: Any, target: str) -> Markdown:
    """A Markdown link to a relative path: the label escaped (unless Markdown), the target
    percent-encoded so no character of a folder name can end it."""
    from urllib.parse import quote

    return Markdown(f"[{markdown(label)}]({quote(target, safe='/=,._-~@:+')})")
