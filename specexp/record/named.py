"""The base of the record's conditions and metrics: a frozen model of typed fields, with `get(name)`
for a name held in a variable."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """A frozen part of a run record: unknown keys are refused, nothing changes once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Named(Record):
    """Conditions or metrics: each a typed attribute (`conditions.drafter`); `get(name)` for a name
    held in a variable (a table's columns), which must be one the vocabulary defines."""

    def get(self, name: str) -> Any:
        try:
            return self.__dict__[name]  # a field's value: what pydantic keeps there
        except KeyError:
            raise KeyError(
                f"{name!r} is not a {type(self).__name__[:-1].lower()} of the vocabulary"
            ) from None
