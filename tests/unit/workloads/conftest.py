"""A simulated server on the wall clock (specexp.sim's HTTP server), for the workloads' client paths."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sim_server import sim_server


@pytest.fixture(scope="module")
def sim_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sim_server(
        tmp_path_factory.mktemp("sim_serve"),
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "drafter=mtp",
        "k=3",
        speed=4,
    ) as url:
        yield url
