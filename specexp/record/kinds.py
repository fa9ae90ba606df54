"""What a measurement measured, read from its record's conditions: the kind that decides which report
section shows it and which throughput a speedup divides (specexp.check.judgments)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

KINDS = ("decode", "concurrency", "rate", "prefill", "prefix_cache")
"""Every kind of measurement, in the order the report shows them."""


class Measured(Protocol):
    """A measurement with the run it belongs to (a report row, a judged run)."""

    @property
    def run_id(self) -> str: ...

    @property
    def conditions(self) -> Any: ...


def measurement_kinds(items: Sequence[Measured]) -> list[str]:
    """Each measurement's kind: open-loop (a request rate), prefix cache (a warm cache in its run),
    prefill (one output token), concurrency (its run measured several streams at once), else
    decode."""
    caches: dict[str, set[str]] = {}
    concurrencies: dict[str, set[int]] = {}
    for r in items:
        caches.setdefault(r.run_id, set()).add(str(r.conditions.cache))
        concurrencies.setdefault(r.run_id, set()).add(int(r.conditions.concurrency or 1))
    out = []
    for r in items:
        if r.conditions.request_rate is not None:
            out.append("rate")
        elif "warm" in caches[r.run_id]:
            out.append("prefix_cache")
        elif r.conditions.output_tokens == 1:
            out.append("prefill")
        elif max(concurrencies[r.run_id]) > 1:
            out.append("concurrency")
        else:
            out.append("decode")
    return out
