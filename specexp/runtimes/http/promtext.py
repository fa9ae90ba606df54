"""Prometheus text exposition -> samples, with prometheus_client's own parser."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def parse(text: str, dropped: list[str] | None = None) -> list[Sample]:
    """Every sample of an exposition with a finite value. A NaN or ±Inf sample counts nothing: it is
    left out, and its name appended to `dropped`. Raises ValueError on text that is not an
    exposition."""
    samples = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            value = float(s.value)
            if math.isfinite(value):
                samples.append(Sample(s.name, dict(s.labels), value))
            elif dropped is not None and s.name not in dropped:
                dropped.append(s.name)
    return samples


def total(samples: Iterable[Sample], name: str) -> float | None:
    """Sum of every sample named `name` over all label sets (engines, DP ranks); None if absent."""
    values = [s.value for s in samples if s.name == name]
    return sum(values) if values else None


REPLICA_LABELS = frozenset(
    {"tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank", "attn_cp_rank", "pid"}
)
"""Labels that tell apart copies of one figure: the tensor/pipeline/expert-parallel workers of one
data-parallel rank run the same batches, so each exports the same count (SGLang's scheduler
metrics carry tp_rank, pp_rank, moe_ep_rank and, with several DP ranks, dp_rank)."""


def shard_mean(
    samples: Iterable[Sample], name: str, replicas: frozenset[str] = REPLICA_LABELS
) -> float | None:
    """Mean of a share (a gauge 0-1, such as KV-cache use) over its shards, each counted once."""
    shards = {
        tuple(sorted((k, v) for k, v in s.labels.items() if k not in replicas))
        for s in samples
        if s.name == name
    }
    found = shard_total(samples, name, replicas)
    return None if found is None else found / len(shards)


def shard_total(
    samples: Iterable[Sample], name: str, replicas: frozenset[str] = REPLICA_LABELS
) -> float | None:
    """Sum of `name` over its shards (label sets other than `replicas`: dp_rank, engine, is_streaming,
    cache_source, ...), counting a figure replicated on several workers of one shard once (their
    largest value: a replica scraped a moment earlier lags); None if absent."""
    shards: dict[tuple[tuple[str, str], ...], float] = {}
    for s in samples:
        if s.name == name:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k not in replicas))
            shards[key] = max(shards.get(key, s.value), s.value)
    return sum(shards.values()) if shards else None


def by_label(samples: Iterable[Sample], name: str, label: str) -> dict[str, float]:
    """Samples named `name` summed per value of `label` (e.g. position -> count)."""
    out: dict[str, float] = {}
    for s in samples:
        if s.name == name and label in s.labels:
            out[s.labels[label]] = out.get(s.labels[label], 0.0) + s.value
    return out


def positions(samples: Iterable[Sample], name: str) -> tuple[float, ...] | None:
    """A per-position counter (label position = "0".."k-1") as a tuple in position order."""
    per = by_label(samples, name, "position")
    if not per:
        return None
    ordered = sorted(per.items(), key=lambda kv: int(kv[0]))
    return tuple(v for _, v in ordered)
