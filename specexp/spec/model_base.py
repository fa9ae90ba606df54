"""The base of every spec model: frozen, unknown keys refused, its validators built at first use."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


def _listed(value: object) -> object:
    """A single value where a list is accepted: the list of it."""
    return [value] if isinstance(value, (int, float, str)) else value


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
