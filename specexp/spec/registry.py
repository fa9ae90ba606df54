"""One generic registry keyed by name, with did-you-mean errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from specexp.spec.errors import SpecError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named things of one kind (runtimes, workload builders, ...). A duplicate name raises."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(item: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._items[name] = item
            return item

        return add

    def get(self, name: str) -> T:
        if name not in self._items:
            raise SpecError(
                self.kind,
                self.kind,
                f"no {self.kind} named '{name}'",
                accepted=sorted(self._items),
                value=name,
            )
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
