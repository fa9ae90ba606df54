"""Every workload is driven by its kind (WorkloadSpec.kind): a module of its own, open-loop load, or
closed-loop bursts; no workload falls between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specexp.workloads.driver import OWN_DRIVERS

CONF = Path(__file__).resolve().parents[3] / "conf" / "workload"
OPEN_AND_CLOSED = {"search", "rate", "burst"}


@pytest.mark.parametrize("name", sorted(p.stem for p in CONF.glob("*.yaml")))
def test_every_workload_option_has_a_kind_the_driver_handles(make_spec: Any, name: str) -> None:
    kind = make_spec(f"workload={name}").workload.kind
    assert kind in set(OWN_DRIVERS) | OPEN_AND_CLOSED


def test_kinds_follow_what_the_workload_sets(make_spec: Any) -> None:
    assert make_spec("workload=lossless_sampling").workload.kind == "samples"
    assert make_spec("workload=concurrency").workload.kind == "burst"
    rate = make_spec(
        "workload=concurrency", "workload.request_rate=[1,2]", "workload.num_requests=8"
    )
    assert rate.workload.kind == "rate"


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["workload=concurrency", "workload.arrival=gamma"], "workload.arrival=gamma"),
        (["workload=fresh_generation", "+workload.trace_speed=2"], "workload.trace_speed=2.0"),
        (["workload=concurrency", "workload.search_steps=3"], "workload.search_steps=3"),
    ],
)
def test_a_key_only_another_kind_reads_is_refused_naming_it(
    make_spec: Any, overrides: list[str], named: str
) -> None:
    with pytest.raises(Exception, match="is read only by") as err:
        make_spec(*overrides)
    assert named in str(err.value) and "driven as burst" in str(err.value)


def test_a_key_of_the_workloads_own_kind_is_taken(make_spec: Any) -> None:
    spec = make_spec(
        "workload=concurrency",
        "workload.request_rate=[1,2]",
        "workload.num_requests=8",
        "workload.arrival=gamma",
        "workload.burstiness=0.5",
    )
    assert (spec.workload.kind, spec.workload.arrival) == ("rate", "gamma")


def test_a_cap_on_requests_in_flight_is_taken_by_every_kind(make_spec: Any) -> None:
    # max_concurrency caps every kind's windows (the runtimes apply it to each), so it is no open-loop key
    spec = make_spec("workload=concurrency", "+workload.max_concurrency=1")
    assert (spec.workload.kind, spec.workload.max_concurrency) == ("burst", 1)
