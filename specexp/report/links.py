"""Links inside a report: the id a heading gets, and the link to a section's table."""

from __future__ import annotations

import re

from specexp.report.tables import TITLES


def anchor(title: str) -> str:
    """The id GitHub and the HTML report give a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def table_link(section: str) -> str:
    """`[table](#...)`: the link to the table of a report section (a key of TITLES)."""
    return f"[table](#{anchor(TITLES[section])})"
