"""The vocabulary: the conditions of docs/vocabulary.md section 1 (defined in
specexp.spec.condition_defs) and the names of its metrics (section 2, defined in
specexp.spec.metric_defs), with the rules built on them.

A condition is a fact about how a number was obtained that can move it. Each one has a type,
a role (what part of an experiment it describes), the values it accepts, and how closely two
values must agree to count as the same. Every other module reads names, types and roles from
here: records type their conditions with it, reports choose their columns by role, the
checker validates cited values with it, and there is one rule for which run is the baseline
of another.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from specexp.spec.condition_defs import CONDITIONS as CONDITIONS
from specexp.spec.condition_defs import ROLES as ROLES
from specexp.spec.condition_defs import Condition as Condition
from specexp.spec.condition_defs import Role as Role
from specexp.spec.metric_defs import (
    DISTRIBUTED as DISTRIBUTED,  # re-exported: the vocabulary names them
)
from specexp.spec.metric_defs import METRICS as METRICS
from specexp.spec.metric_defs import STATS as STATS
from specexp.spec.metric_defs import MetricDef as MetricDef

NAMES: tuple[str, ...] = tuple(CONDITIONS)


class Names:
    """The vocabulary's names as attributes, each its own string (`C.drafter == "drafter"`): code
    that must key a mapping by a condition or metric (a cited figure's stated conditions, a chart's
    data) writes `C.drafter`, so a name the vocabulary does not define fails where it is written."""

    def __init__(self, names: Iterable[str], kind: str) -> None:
        self.__dict__.update({name: name for name in names})
        self._kind = kind

    def __getattr__(self, name: str) -> str:
        raise AttributeError(
            f"{name!r} is not a {self._kind} of the vocabulary (docs/vocabulary.md)"
        )


C = Names(CONDITIONS, "condition")
"""Every condition's name: `C.concurrency`."""
CLOSED_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "cache": ("cold", "warm"),
        "source": ("measured", "simulated", "cited"),
        "weights": ("trained", "random", "dummy"),
        "prompt_text": ("real", "random"),
    }
)


def with_role(*roles: Role) -> tuple[str, ...]:
    """The conditions of these roles, in vocabulary order."""
    return tuple(c.name for c in CONDITIONS.values() if c.role in roles)


SETUP = with_role("setup")
"""What a server is: hardware, model, weights, engine and its settings."""
DRAFTER = with_role("drafter")
"""What drafts: the conditions a speedup varies."""


def accepted(name: str) -> list[str] | None:
    """The closed set of values a condition takes, or None where any value of its type is fine."""
    condition = CONDITIONS[name]
    if condition.options is None:
        return None
    if condition.options in CLOSED_VALUES:
        return list(CLOSED_VALUES[condition.options])
    return _OPTION_SOURCES[condition.options](name)


def _conf_options(name: str) -> list[str]:
    from specexp.spec import paths

    return paths.options(name)


def _literal_options(name: str) -> list[str]:
    from typing import get_args

    from specexp.spec.experiment import DrafterSpec
    from specexp.spec.runtime import RUNTIMES

    if name == "runtime":
        return list(RUNTIMES)
    return list(get_args(DrafterSpec.model_fields["name"].annotation))


_OPTION_SOURCES: Mapping[str, Callable[[str], list[str]]] = MappingProxyType(
    {
        "conf": _conf_options,
        "drafter": _literal_options,
        "runtime": _literal_options,
    }
)


def value_key(value: Any) -> Any:
    """A condition value as a dictionary key (lists become tuples)."""
    return tuple(value) if isinstance(value, list) else value


def is_baseline_of(
    candidate: Mapping[str, Any], conditions: Mapping[str, Any], ignore: Iterable[str] = ()
) -> bool:
    """Whether `candidate` is the drafter=none run that `conditions` is to be compared with: it
    drafts nothing and agrees on every condition except the drafter's and those a baseline may
    differ in. The one baseline rule of speedups, output identity and the checker."""
    if candidate.get("drafter") != "none" or conditions.get("drafter") in (None, "none"):
        return False
    return baseline_key(candidate, ignore) == baseline_key(conditions, ignore)


T = TypeVar("T")


def baseline_key(conditions: object, ignore: Iterable[str] = ()) -> tuple[Any, ...]:
    """What a run and its baseline agree on (`is_baseline_of`) as one key (a mapping or a record's)."""
    values = conditions if isinstance(conditions, Mapping) else vars(conditions)
    return tuple(value_key(values.get(name)) for name in _compared(frozenset(ignore)))


@functools.cache
def _compared(ignore: frozenset[str]) -> tuple[str, ...]:
    """The conditions a run and its baseline must agree on."""
    return tuple(
        c.name
        for c in CONDITIONS.values()
        if c.role != "drafter" and not c.baseline_may_differ and c.name not in ignore
    )


class Baselines(Generic[T]):
    """The drafter=none runs among `candidates`, found by `is_baseline_of` in one lookup each: the
    first in order of those a run agrees with, as a search from the start finds it; where several
    agree and differ in `prompt_tokens` (which a baseline may: servers count a prompt their own
    way), the one nearest the run's, so each depth of a run of several lengths has its own."""

    def __init__(
        self,
        candidates: Iterable[T],
        conditions_of: Callable[[T], object],
        ignore: Iterable[str] = (),
    ) -> None:
        self._conditions_of, self._ignore = conditions_of, tuple(ignore)
        self._agreeing: dict[tuple[Any, ...], list[tuple[Any, T]]] = {}
        for candidate in candidates:
            found = conditions_of(candidate)
            values = found if isinstance(found, Mapping) else vars(found)
            if values.get("drafter") == "none":
                self._agreeing.setdefault(baseline_key(found, self._ignore), []).append(
                    (values.get("prompt_tokens"), candidate)
                )

    def of(self, conditions: object) -> T | None:
        """The baseline of a run of these `conditions` (mapping or record); None if it drafts nothing."""
        values = conditions if isinstance(conditions, Mapping) else vars(conditions)
        if values.get("drafter") in (None, "none"):
            return None
        agreeing = self._agreeing.get(baseline_key(values, self._ignore))
        if not agreeing:
            return None
        ours = values.get("prompt_tokens")
        if len(agreeing) == 1 or not ours or ours <= 0:
            return agreeing[0][1]
        return min(agreeing, key=lambda pc: _distance(ours, pc[0]))[1]


def _distance(ours: float, theirs: Any) -> float:
    """How far apart two prompt lengths are, by their ratio; unknown or zero is farthest."""
    if not isinstance(theirs, (int, float)) or theirs <= 0:
        return math.inf
    return abs(math.log(theirs / ours))


# -- metrics (docs/vocabulary.md section 2): defined in specexp.spec.metric_defs, named here --

M = Names(METRICS, "metric")
"""Every metric's name: `M.ttft_s`."""
