"""What the engine was doing while a window ran: its state, read at a fixed interval, drawn on one
time axis with the window's requests (the record's `engine_series`; specexp.measure.engine_series).

One window per drafter arm is drawn, the first timed window of the arm's most loaded measurement
(its highest concurrency or request rate): its requests as bars (waiting for the first token, then
decoding), the requests the engine ran and queued, and the share of KV cache in use with the share
of drafted tokens accepted between two readings. The cost of reading is said beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import altair as alt

from specexp.record import RunRecord
from specexp.record.escape import Markdown
from specexp.record.schema import EngineSeries, Measurement
from specexp.report.blocks import Block, Chart, Heading, Paragraph
from specexp.report.chart_parts import WIDTH, file_name, vega_spec
from specexp.report.format import arm
from specexp.spec.arms import arm_label

TITLE = "What the engine was doing"
MOST = 8
"""Windows drawn at most (one per drafter arm)."""


def chosen(records: Sequence[RunRecord]) -> list[tuple[RunRecord, Measurement, EngineSeries]]:
    """Per drafter arm, the first window with readings of its most loaded measurement."""
    best: dict[tuple[str, Any], tuple[float, RunRecord, Measurement, EngineSeries]] = {}
    for record in records:
        for m in record.measurements:
            series = next((s for s in m.engine_series or () if s is not None and s.t), None)
            if series is None:
                continue
            c = m.conditions
            load = float(c.request_rate or c.concurrency or 1)
            key = (str(c.drafter), c.k)
            if key not in best or load > best[key][0]:
                best[key] = (load, record, m, series)
    ordered = sorted(best.items(), key=lambda kv: (kv[0][0] != "none", kv[0][0], kv[0][1] or 0))
    return [(r, m, s) for _, (_, r, m, s) in ordered[:MOST]]


def engine_section(records: Sequence[RunRecord]) -> list[Block]:
    picked = chosen(records)
    if not picked:
        return []
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "The engine's own state, read every `workload.engine_series_interval_s` while a timed "
                "window ran, on the window's clock beside its requests (grey: waiting for the first "
                "token; colour: decoding). *accepted* is the share of drafted tokens the engine "
                "accepted between two readings; *KV cache* the share of it running requests hold. "
                "One window per drafter arm: the first of its most loaded measurement."
            )
        ),
    ]
    for record, m, series in picked:
        c = m.conditions
        load = (
            f"{c.request_rate:g} req/s"
            if c.request_rate is not None
            else f"concurrency {c.concurrency}"
        )
        named = arm(c.drafter, c.k, none="no drafter")
        blocks.append(
            Paragraph(Markdown(f"{named}, {load}, run `{record.run_id}`: {_cost(series)}"))
        )
        blocks.append(_chart(series, f"engine-{record.run_id}-{arm_label(c.drafter, c.k)}", load))
    return blocks


def _cost(series: EngineSeries) -> str:
    readings = len(series.t)
    said = f"{readings} reading(s) {series.interval_s:g} s apart"
    if series.clock == "simulated":
        return said + " of the simulator's clock (read from its own state: they cost nothing)."
    if series.read_s is not None:
        said += f", each answered in {series.read_s * 1000:.1f} ms on average"
    if series.failed:
        said += f"; {series.failed} got no answer"
    return said + "."


def _rows(series: EngineSeries) -> dict[str, list[dict[str, Any]]]:
    """The chart's rows: the requests' bars, the counts, and the shares (acceptance between two
    readings, KV-cache use)."""
    bars = []
    for i, (sent, first, last) in enumerate(series.requests):
        if sent is None:
            continue
        if first is not None:
            bars.append({"request": i, "from": sent, "to": first, "phase": "to first token"})
        if first is not None and last is not None and last > first:
            bars.append({"request": i, "from": first, "to": last, "phase": "decoding"})
    counts = [
        {"t": t, "what": what, "requests": v}
        for what, column in (("running", series.running), ("waiting", series.waiting))
        for t, v in zip(series.t, column, strict=True)
        if v is not None
    ]
    shares = [
        {"t": t, "what": "KV cache", "share": v}
        for t, v in zip(series.t, series.kv_usage, strict=True)
        if v is not None
    ]
    shares += _acceptance(series)
    return {"bars": bars, "counts": counts, "shares": shares}


def _acceptance(series: EngineSeries) -> list[dict[str, Any]]:
    """Accepted over drafted tokens between consecutive readings where the engine drafted."""
    out = []
    pairs = list(zip(series.t, series.draft_tokens, series.accepted, strict=True))
    for (_, d0, a0), (t1, d1, a1) in zip(pairs, pairs[1:]):
        if None in (d0, a0, d1, a1):
            continue
        drafted = float(d1 or 0) - float(d0 or 0)
        if drafted > 0:
            accepted = float(a1 or 0) - float(a0 or 0)
            out.append(
                {"t": t1, "what": "accepted", "share": min(max(accepted / drafted, 0.0), 1.0)}
            )
    return out


def _chart(series: EngineSeries, name: str, load: str) -> Chart:
    rows = _rows(series)
    clock = "simulated seconds" if series.clock == "simulated" else "seconds"
    end = max([*series.t, *(r["to"] for r in rows["bars"])], default=1.0)
    x = alt.X("t:Q", title=f"{clock} since the window began", scale=alt.Scale(domain=[0, end]))
    # a real server is read at an instant; the simulator after a step, of the batch that step ran
    step: Literal["step-before", "step-after"] = (
        "step-before" if series.clock == "simulated" else "step-after"
    )
    panels = []
    if rows["bars"]:
        height = min(max(4 * len(series.requests), 60), 240)
        panels.append(
            alt.Chart(alt.Data(values=rows["bars"]))
            .mark_bar()
            .encode(
                x=alt.X("from:Q", title=None, scale=alt.Scale(domain=[0, end])),
                x2="to:Q",
                y=alt.Y("request:O", title="request", axis=alt.Axis(labels=False, ticks=False)),
                color=alt.Color(
                    "phase:N",
                    title=None,
                    scale=alt.Scale(
                        domain=["to first token", "decoding"], range=["#bbbbbb", "#4c78a8"]
                    ),
                ),
                tooltip=["request:O", "phase:N", "from:Q", "to:Q"],
            )
            .properties(width=WIDTH * 2, height=height)
        )
    if rows["counts"]:
        panels.append(
            alt.Chart(alt.Data(values=rows["counts"]))
            .mark_line(interpolate=step, point=True)
            .encode(
                x=x, y=alt.Y("requests:Q", title="requests"), color=alt.Color("what:N", title=None)
            )
            .properties(width=WIDTH * 2, height=120)
        )
    if rows["shares"]:
        panels.append(
            alt.Chart(alt.Data(values=rows["shares"]))
            .mark_line(point=True)
            .encode(
                x=x,
                y=alt.Y("share:Q", title="share", scale=alt.Scale(domain=[0, 1])),
                color=alt.Color("what:N", title=None),
            )
            .properties(width=WIDTH * 2, height=120)
        )
    title = f"The engine over one window · {load}"
    chart = alt.vconcat(*panels).resolve_scale(color="independent").properties(title=title)
    spec = vega_spec(chart)
    return Chart(file_name(name), title, spec)
