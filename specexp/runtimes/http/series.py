"""A server's metrics endpoint read as the engine's state (specexp.measure.engine_series), over one
connection kept open for the readings of a job."""

from __future__ import annotations

from typing import Protocol

import httpx

from specexp.measure.engine_series import EngineState
from specexp.measure.events import Counters
from specexp.runtimes.http import promtext


class NoExposition(Exception):
    """The metrics endpoint gave no exposition: why, in one line naming the path."""


def read_exposition(
    client: httpx.Client, path: str, dropped: list[str] | None = None
) -> list[promtext.Sample]:
    """The samples of the exposition at `path` (a NaN or ±Inf sample left out, named in `dropped`);
    NoExposition where the server cannot be reached, answers other than 200, or sends no
    Prometheus text."""
    try:
        response = client.get(path)
    except httpx.HTTPError as err:
        raise NoExposition(f"{path} unreachable ({type(err).__name__})") from err
    if response.status_code != 200:
        raise NoExposition(f"{path} answered HTTP {response.status_code}")
    try:
        return promtext.parse(response.text, dropped)
    except ValueError as err:
        raise NoExposition(f"{path} is not a Prometheus exposition ({err})") from err


class Reads(Protocol):
    """What a reader asks of the runtime it reads."""

    @property
    def metrics_path(self) -> str | None: ...

    def sync_client(self) -> httpx.Client: ...

    def map_counters(self, samples: list[promtext.Sample]) -> Counters: ...

    @property
    def load_metrics(self) -> tuple[str | None, str | None, str | None]: ...


class MetricsReader:
    """One reading of the engine's metrics per call; None where it got no exposition."""

    def __init__(self, runtime: Reads) -> None:
        self.runtime = runtime
        self.client: httpx.Client | None = None

    def __call__(self) -> EngineState | None:
        path = self.runtime.metrics_path
        if path is None:
            return None
        if self.client is None:
            self.client = self.runtime.sync_client()
        try:
            samples = read_exposition(self.client, path)
        except NoExposition:
            return None
        running, waiting, kv_usage = self.runtime.load_metrics
        return EngineState(
            promtext.shard_total(samples, running) if running else None,
            promtext.shard_total(samples, waiting) if waiting else None,
            promtext.shard_mean(samples, kv_usage) if kv_usage else None,
            self.runtime.map_counters(samples),
        )

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
