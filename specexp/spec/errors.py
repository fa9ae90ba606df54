"""User-facing errors: one line naming where, which key, and what is accepted.

A file with several mistakes is answered with all of them at once, one line each
(`SpecErrors`), so that it is fixed in one go rather than in as many runs as it has mistakes.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterable, Iterator, Sequence


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

    def lines(self) -> list[str]:
        """One line per mistake (a `SpecError` is one)."""
        return [self.line()]


class SpecErrors(SpecError):
    """Every mistake found in one input, each its own `SpecError` and its own line; the first
    stands for all where one line is read (`where`, `key`, `problem`)."""

    def __init__(self, errors: Sequence[SpecError]) -> None:
        self.errors = [one for err in errors for one in _each(err)]
        first = self.errors[0]
        super().__init__(first.where, first.key, first.problem, first.accepted, first.value)

    def line(self) -> str:
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        return [err.line() for err in self.errors]


def _each(err: SpecError) -> list[SpecError]:
    return err.errors if isinstance(err, SpecErrors) else [err]


def all_of(errors: Sequence[SpecError]) -> SpecError:
    """The one error to raise for `errors` (at least one): itself when alone, else all of them."""
    return errors[0] if len(errors) == 1 else SpecErrors(errors)


class Mistakes:
    """The mistakes found so far in one input, to be answered together once it is all read."""

    def __init__(self) -> None:
        self.found: list[SpecError] = []

    def add(self, err: SpecError) -> None:
        self.found.append(err)

    @contextlib.contextmanager
    def noted(self) -> Iterator[None]:
        """Run a block: a `SpecError` it raises is noted and ends the block, not the reading."""
        try:
            yield
        except SpecError as err:
            self.found.append(err)

    def raise_any(self) -> None:
        """Raise every mistake noted, if any."""
        if self.found:
            raise all_of(self.found)


def exit_on_spec_error(err: SpecError) -> None:
    """Print the message, one line per mistake, and exit 2, as every specexp command does on bad
    input."""
    import sys

    from specexp.spec.redact import redact  # an override quoted may hold a URL's password

    for line in err.lines():
        print(f"specexp: {redact(line)}", file=sys.stderr, flush=True)
    raise SystemExit(2)
