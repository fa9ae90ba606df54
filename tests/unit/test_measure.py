"""specexp.measure.measurements: windows -> one measurement per point; medians over repeats, pooled counters."""

from __future__ import annotations

from typing import Any

import pytest

from specexp.measure.events import Counters, Point, RequestTrace, TokenEvent, Window
from specexp.measure.measurements import measurements as _measurements
from specexp.record import Conditions
from specexp.spec.vocabulary import NAMES

RUN_VALUES: dict[str, Any] = {
    "hardware": "h200",
    "drafter": "mtp",
    "k": 2,
    "repeats": 1,
    "source": "simulated",
}
RUN = Conditions(**{n: RUN_VALUES.get(n) for n in NAMES})


def measurements(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """The measurements as they are written to result.json."""
    return [m.model_dump() for m in _measurements(*args, **kwargs)]


def _trace(
    rid: str, decode_gap: float, prompt_tokens: int = 96, source: str = "server"
) -> RequestTrace:
    events = tuple(TokenEvent(t=1.0 + decode_gap * i, tokens=1) for i in range(11))
    return RequestTrace(
        request_id=rid,
        sent_at=0.0,
        events=events,
        prompt_tokens=prompt_tokens,
        completion_tokens=11,
        token_source=source,
    )  # type: ignore[arg-type]


def _window(
    point: Point, rid: str, gap: float, drafts: float, accepted: tuple[float, float], **kw: Any
) -> Window:
    delta = Counters(
        drafts=drafts,
        draft_tokens=2 * drafts,
        accepted=sum(accepted),
        accepted_per_position=accepted,
    )
    return Window(point, [_trace(rid, gap, **kw)], delta)


P1 = Point(prompt_tokens=100, concurrency=1, cache="cold")


def test_repeats_give_the_median_and_keep_every_sample() -> None:
    windows = [_window(P1, f"r{i}", gap, 10, (5, 2)) for i, gap in enumerate((0.1, 0.05, 0.2))]
    [m] = measurements(windows, RUN, prefill_only=False, kv_cache_tokens=1000)
    assert m["samples"]["decode_tps"] == pytest.approx([10.0, 20.0, 5.0])
    assert m["metrics"]["decode_tps"] == pytest.approx(10.0)
    assert m["conditions"]["repeats"] == 3
    assert m["metrics"]["kv_cache_tokens"] == 1000


def test_acceptance_pools_counters_over_repeats() -> None:
    # 10 drafts with 10 accepted, then 30 drafts with 6 accepted: pooled 16 / 80, not the mean of ratios.
    windows = [_window(P1, "a", 0.1, 10, (7, 3)), _window(P1, "b", 0.1, 30, (5, 1))]
    [m] = measurements(windows, RUN, prefill_only=False, kv_cache_tokens=None)
    assert m["metrics"]["acceptance_rate"] == pytest.approx(16 / 80)
    assert m["metrics"]["acceptance_by_position"] == pytest.approx([12 / 40, 4 / 40])
    assert m["metrics"]["tokens_per_pass"] == pytest.approx(1 + 16 / 40)


def test_one_measurement_per_point_in_first_measured_order() -> None:
    p4 = Point(prompt_tokens=100, concurrency=4, cache="cold")
    windows = [
        _window(p4, "a", 0.1, 1, (1, 0)),
        _window(P1, "b", 0.1, 1, (1, 0)),
        _window(p4, "c", 0.1, 1, (1, 0)),
    ]
    out = measurements(windows, RUN, prefill_only=False, kv_cache_tokens=None)
    assert [m["conditions"]["concurrency"] for m in out] == [4, 1]
    assert [m["conditions"]["repeats"] for m in out] == [2, 1]
    assert out[0]["requests"] == ["a", "c"]


def test_measurement_conditions_merge_run_and_point() -> None:
    warm = Point(prompt_tokens=100, concurrency=1, cache="warm")
    [m] = measurements(
        [_window(warm, "a", 0.1, 1, (1, 0), prompt_tokens=104)],
        RUN,
        prefill_only=False,
        kv_cache_tokens=None,
    )
    c = m["conditions"]
    assert c["hardware"] == "h200" and c["drafter"] == "mtp" and c["k"] == 2
    assert c["cache"] == "warm" and c["concurrency"] == 1
    assert c["prompt_tokens"] == 104  # the server's count, not the planned length
    assert RUN.prompt_tokens is None  # the run-level conditions are not mutated


def test_token_source_is_client_when_any_request_counted_client_side() -> None:
    windows = [_window(P1, "a", 0.1, 1, (1, 0)), _window(P1, "b", 0.1, 1, (1, 0), source="client")]
    [m] = measurements(windows, RUN, prefill_only=False, kv_cache_tokens=None)
    assert m["token_source"] == "client"
    [m] = measurements(windows[:1], RUN, prefill_only=False, kv_cache_tokens=None)
    assert m["token_source"] == "server"


def test_measurement_has_the_record_fields() -> None:
    [m] = measurements(
        [_window(P1, "a", 0.1, 1, (1, 0))], RUN, prefill_only=False, kv_cache_tokens=None
    )
    assert {"conditions", "metrics", "token_source", "samples"} <= set(m)
    assert "output_identical" in m["metrics"]
