"""Charts as Vega-Lite specs (Altair), rendered to SVG files for Markdown and by vega-embed in HTML."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import altair as alt

from specexp.report.blocks import Chart
from specexp.report.tables import Row
from specexp.spec.arms import arm_label, draft_length

WIDTH = 420
HEIGHT = 260
"""One panel, in pixels: legible at a report's width (two panels side by side fit 1,000 px)."""


def _legend_toggles(chart: alt.Chart, field: str, tooltip: Sequence[str]) -> alt.Chart:
    """Click a legend entry to bring its series forward (the others fade); hover a point for its
    run id and conditions. In the SVG files every series is drawn in full."""
    pick = alt.selection_point(fields=[field], bind="legend")
    # typed channels: Altair need not infer them from plain values (~50 ms a chart)
    return chart.add_params(pick).encode(
        opacity=alt.Opacity(condition={"param": pick.name, "value": 1.0}, value=0.15),
        tooltip=[alt.Tooltip(t) for t in tooltip],
    )


def _arm_lines(
    data: list[dict[str, Any]],
    x: alt.X,
    y: alt.Y,
    axes: Sequence[str],
    facet: str,
    name: str,
    title: str,
) -> list[Chart]:
    """One line per drafter arm (`arm` of each datum), a panel per value of `facet`; `axes` are the
    x and y fields the tooltip names beside the arm, run and conditions."""
    chart = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(x=x, y=y, color=alt.Color("arm:N", title="drafter"))
        .properties(width=WIDTH, height=HEIGHT)
    )
    chart = _legend_toggles(chart, "arm", ["arm:N", *axes, "run:N", "conditions:N"])
    chart = chart.facet(column=alt.Column(f"{facet}:N", title=None)).properties(title=title)
    return [Chart(_name(name), title, _spec(chart))]


def _who(row: Row) -> dict[str, Any]:
    """What a tooltip says of a point: its run and the conditions that set it."""
    c = row.conditions
    return {
        "run": row.run_id,
        "conditions": " · ".join(
            str(v)
            for v in (c.hardware, c.model, c.quantization, c.runtime, c.workload)
            if v is not None
        ),
    }


def _means(points: list[dict[str, Any]], value: str) -> list[dict[str, Any]]:
    """One point per place on a chart: where runs share one (seeds, or conditions the chart does
    not set apart), their mean, its tooltip saying of how many runs; a point of one run stays as
    it is. A sweep of thousands of runs draws thousands of points a reader cannot tell apart."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for p in points:
        key = tuple((k, v) for k, v in p.items() if k not in (value, "run", "conditions"))
        groups.setdefault(key, []).append(p)
    out = []
    for members in groups.values():
        point = dict(members[0])
        if len(members) > 1:
            point[value] = statistics.fmean(m[value] for m in members)
            point["run"] = f"mean of {len(members)} runs"
            setups = {m["conditions"] for m in members}
            point["conditions"] = setups.pop() if len(setups) == 1 else f"{len(setups)} setups"
        out.append(point)
    return out


def _name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:120]


def _arm(row: Row, setups: Sequence[str] = ()) -> str:
    arm = arm_label(row.conditions.drafter, row.conditions.k)
    return f"{_setup(row, setups)} · {arm}" if setups else arm


def _setup(row: Row, setups: Sequence[str]) -> str:
    """The conditions that tell this row's server apart from the others in the chart."""
    return " · ".join(str(row.get(c)) for c in setups) or "—"


VALIDATE = False
"""Whether each chart is checked against the Vega-Lite schema as it is built (a fifth of a report's
time; the report tests turn it on)."""


def schema_checks() -> AbstractContextManager[None]:
    """Altair checks every part of a chart against the schema as it is made (its debug mode, on by
    default: a third of a report's time): only where VALIDATE asks for it."""
    return alt.utils.schemapi.debug_mode(VALIDATE)


def _spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
    """The chart's Vega-Lite spec. Its inline rows are set into the spec as they are: Altair would
    walk each of thousands of rows' values to convert them (a large report's charts' time), and
    specexp's rows are plain numbers and strings already."""
    data = getattr(chart, "data", None)
    if not (isinstance(data, alt.Data) and isinstance(data.values, list)):
        return chart.to_dict(validate=VALIDATE)
    assert isinstance(chart, alt.SchemaBase)  # every top-level chart is one
    bare = chart.copy(deep=False)
    bare.data = alt.Data(values=[])
    spec: dict[str, Any] = bare.to_dict(validate=VALIDATE)
    spec["data"] = {"values": data.values}
    return spec


def tps_vs_k(
    rows: Sequence[Row], name: str, label: str = "", setups: Sequence[str] = ()
) -> list[Chart]:
    """Decode tok/s against k per drafter, one panel per workload (and per server setup where
    those differ); no drafter at k = 0. Left out when no drafter was run at two values of k."""
    data = [
        {
            "workload": r.conditions.workload,
            "drafter": r.conditions.drafter,
            "k": draft_length(r.conditions.drafter, r.conditions.k),
            "setup": _setup(r, setups),
            "decode_tps": r.metrics.decode_tps,
            **_who(r),
        }
        for r in rows
        if r.metrics.decode_tps
    ]
    data = _means(data, "decode_tps")
    ks: dict[str, set[int]] = {}
    for r in rows:
        if r.metrics.decode_tps:
            ks.setdefault(str(r.conditions.drafter), set()).add(
                draft_length(r.conditions.drafter, r.conditions.k)
            )
    if not any(len(v) > 1 for name_, v in ks.items() if name_ != "none"):
        return []
    base = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(
            x=alt.X("k:Q", title="k (draft tokens per step; 0 = no drafter)"),
            y=alt.Y("decode_tps:Q", title="decode_tps (tok/s)"),
            color=alt.Color("drafter:N"),
        )
        .properties(width=WIDTH, height=HEIGHT)
    )
    base = _legend_toggles(
        base, "drafter", ["drafter:N", "k:Q", "decode_tps:Q", "run:N", "conditions:N"]
    )
    column = alt.Column("workload:N", title=None)
    title = f"Decode tok/s vs k: {label}" if label else "Decode tok/s vs k"
    if setups:
        faceted = base.facet(column=column, row=alt.Row("setup:N", title=" · ".join(setups)))
    else:
        faceted = base.facet(column=column)
    chart = faceted.properties(title=title)
    return [Chart(_name(name), title, _spec(chart))]


def acceptance_by_position(
    rows: Sequence[Row], name: str, label: str = "", setups: Sequence[str] = ()
) -> list[Chart]:
    """Share of drafts accepted at each draft position, per drafter and k (and server setup)."""
    data = [
        {
            "workload": r.conditions.workload,
            "arm": _arm(r, setups),
            "position": i + 1,
            "accepted": v,
            **_who(r),
        }
        for r in rows
        for i, v in enumerate(r.metrics.acceptance_by_position or [])
        if v is not None
    ]
    data = _means(data, "accepted")
    if not data:
        return []
    title = f"Acceptance by draft position: {label}" if label else "Acceptance by draft position"
    x = alt.X("position:O", title="draft position")
    y = alt.Y(
        "accepted:Q",
        title="acceptance_by_position",
        axis=alt.Axis(format="%"),
        scale=alt.Scale(domain=[0, 1]),
    )
    return _arm_lines(data, x, y, ["position:O", "accepted:Q"], "workload", name, title)


def concurrency_scaling(
    rows: Sequence[Row], name: str, label: str = "", setups: Sequence[str] = ()
) -> list[Chart]:
    """Aggregate and per-stream tok/s against concurrency, per drafter arm (and server setup)."""
    data = [
        {
            "arm": _arm(r, setups),
            "concurrency": r.conditions.concurrency,
            "metric": metric,
            "tok/s": r.metrics.get(metric),
            **_who(r),
        }
        for r in rows
        for metric in ("aggregate_tps", "per_stream_tps")
        if r.metrics.get(metric)
    ]
    data = _means(data, "tok/s")
    if not data:
        return []
    title = f"Throughput vs concurrency: {label}" if label else "Throughput vs concurrency"
    x = alt.X("concurrency:Q", scale=alt.Scale(type="log", base=2), title="concurrency")
    y = alt.Y("tok/s:Q", title="tok/s")
    return _arm_lines(data, x, y, ["concurrency:Q", "tok/s:Q"], "metric", name, title)


def prefill_by_length(rows: Sequence[Row], name: str) -> list[Chart]:
    """Prefill tok/s against prompt length, one line per hardware/quantization/runtime."""
    data = [
        {
            "prompt_tokens": r.conditions.prompt_tokens,
            "prefill_tps": r.metrics.prefill_tps,
            "setup": f"{r.conditions.hardware} · {r.conditions.quantization} · {r.conditions.runtime}",
            **_who(r),
        }
        for r in rows
        if r.metrics.prefill_tps
    ]
    return _by_length(
        data,
        name,
        "Prefill tok/s by prompt length",
        "prompt tokens",
        "prefill_tps (tok/s)",
        color=alt.Color("setup:N"),
    )


def cold_warm_ttft(rows: Sequence[Row], name: str) -> list[Chart]:
    """TTFT against prefix length, cold and warm."""
    data = [
        {
            "prompt_tokens": r.conditions.prompt_tokens,
            "ttft_s": r.metrics.ttft_s,
            "cache": r.conditions.cache,
            "setup": f"{r.conditions.hardware} · {r.conditions.quantization}",
            **_who(r),
        }
        for r in rows
        if r.metrics.ttft_s
    ]
    return _by_length(
        data,
        name,
        "TTFT cold vs warm by prefix length",
        "prompt tokens (shared prefix + suffix)",
        "ttft_s (s)",
        color=alt.Color("cache:N"),
        strokeDash=alt.StrokeDash("setup:N"),
    )


def _by_length(
    data: list[dict[str, Any]], name: str, title: str, x_title: str, y_title: str, **channels: Any
) -> list[Chart]:
    """A metric (the data's second key) against prompt length, as lines; nothing without data."""
    if not data:
        return []
    y = list(data[0])[1]
    chart = (
        alt.Chart(alt.Data(values=data))
        .mark_line(point=True)
        .encode(
            x=alt.X("prompt_tokens:Q", title=x_title),
            y=alt.Y(f"{y}:Q", title=y_title),
            **channels,
        )
        .properties(width=WIDTH * 2, height=HEIGHT, title=title)
    )
    field = channels["color"].shorthand.split(":")[0]
    chart = _legend_toggles(
        chart,
        field,
        [channels["color"].shorthand, "prompt_tokens:Q", f"{y}:Q", "run:N", "conditions:N"],
    )
    return [Chart(_name(name), title, _spec(chart))]
