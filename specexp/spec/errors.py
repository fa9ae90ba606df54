"""User-facing errors: one line naming where, which key, and what is accepted."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(value: object, accepted: Iterable[object]) -> str | None:
    """The closest accepted value to `value`, if one is close enough to be a typo."""
    names = [str(a) for a in accepted]
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
    return close[0] if close else None


class SpecError(Exception):
    """Invalid input, found before anything runs.

    `where` is a file (``conf/workload/edit_heavy.yaml``) or an override (``k=abc``);
    `key` the dotted key inside it; `accepted` the values that would have been valid.
    """

    def __init__(
        self,
        where: str,
        key: str,
        problem: str,
        accepted: Iterable[object] | None = None,
        value: object = None,
    ) -> None:
        self.where = where
        self.key = key
        self.problem = problem
        self.accepted = [str(a) for a in accepted] if accepted is not None else []
        self.value = value
        super().__init__(self.line())

    def line(self) -> str:
        parts = [f"{self.where}: {self.key}: {self.problem}"]
        if self.accepted:
            shown = ", ".join(self.accepted[:20]) + (", ..." if len(self.accepted) > 20 else "")
            parts.append(f"accepted: {shown}")
            guess = did_you_mean(self.value, self.accepted) if self.value is not None else None
            if guess is not None and guess != str(self.value):
                parts.append(f"did you mean '{guess}'?")
        return "; ".join(parts)


def exit_on_spec_error(err: SpecError) -> None:
    """Print the one-line message and exit 2, as every specexp command does on bad input."""
    import sys

    print(f"specexp: {err.line()}", file=sys.stderr, flush=True)
    raise SystemExit(2)
