"""Whatever a server sends, the job is recorded, its record reads back, and no figure in it is
outside what its definition allows: properties over arbitrary streams and counters.

The fault server's `scripted` mode sends the chunks, usage and /metrics reads hypothesis draws:
any Unicode (lone surrogates, control characters included), any count, NaN and ±Inf, counters in
any order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specexp.check import implausible_runs, runs_of
from specexp.record import read_record
from specexp.run.job import run_job
from specexp.run.plan import make_cell
from tests.support import fault_server as fs

HOSTILE = ["\ud800", "\udfff", "\ud83d", "\ude00", "\x00", "\x1b]0;title\x07", "\r\n", "[/bold]"]
texts = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(HOSTILE)), min_size=1, max_size=6)
counts = st.one_of(st.none(), st.integers(-3, 10**7))
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.integers(0, 10**6))
reads = st.lists(st.fixed_dictionaries({key: numbers for key in fs.SPEC}), min_size=1, max_size=5)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with fs.fault_server() as url:
        yield url


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(texts=texts, usage=counts, metrics=reads)
def test_any_stream_and_counters_are_recorded_and_read_back(
    make_spec: Callable[..., Any],
    server: str,
    tmp_path_factory: pytest.TempPathFactory,
    texts: list[str],
    usage: int | None,
    metrics: list[dict[str, float]],
) -> None:
    fs.SCRIPT.update(texts=texts, usage=usage, metrics=metrics)
    fs._READS.pop("scripted", None)
    spec = make_spec(
        "runtime=vllm",
        f"runtime.url={server}/scripted",
        "workload.output_tokens=8",
        "workload.repeats=2",
        "workload.warmup=0",
        "runtime.stall_timeout_s=1",
        "runtime.served_model_name=fault",
        "drafter=ngram",
        "k=3",
    )
    folder = tmp_path_factory.mktemp("job")
    record = run_job(make_cell(spec), folder, None, [], {})
    assert record is not None and record.status in ("ok", "failed")
    back = read_record(folder / "result.json")
    assert back.run_id == record.run_id and back.status == record.status
    flagged = {f.figures[0] for f in implausible_runs(runs_of([(folder / "result.json", back)]))}
    for run in runs_of([(folder / "result.json", back)]):
        acceptance, per_pass = run.metrics.acceptance_rate, run.metrics.tokens_per_pass
        values = [v for v in run.metrics.model_dump().values() if isinstance(v, float)]
        assert all(math.isfinite(v) for v in values)
        outside = (acceptance is not None and not 0 <= acceptance <= 1) or (
            per_pass is not None and per_pass < 1
        )
        if outside or any(v < 0 for v in values) or run.beyond_stream:
            assert run.id in flagged  # published with a finding, never without a word
