"""Charts as Vega-Lite specs (Altair), rendered to SVG files for Markdown and by vega-embed in HTML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from specexp.report.blocks import Chart
from specexp.report.chart_parts import (
    HEIGHT,
    WIDTH,
    arm_of,
    file_name,
    legend_toggles,
    means,
    setup_of,
    vega_spec,
    who,
)
from specexp.report.tables import Row
from specexp.spec.arms import draft_length


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
    chart = legend_toggles(chart, "arm", ["arm:N", *axes, "run:N", "conditions:N"])
    chart = chart.facet(column=alt.Column(f"{facet}:N", title=None)).properties(title=title)
    return [Chart(file_name(name), title, vega_spec(chart))]


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
            "setup": setup_of(r, setups),
            "decode_tps": r.metrics.decode_tps,
            **who(r),
        }
        for r in rows
        if r.metrics.decode_tps
    ]
    data = means(data, "decode_tps")
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
    base = legend_toggles(
        base, "drafter", ["drafter:N", "k:Q", "decode_tps:Q", "run:N", "conditions:N"]
    )
    column = alt.Column("workload:N", title=None)
    title = f"Decode tok/s vs k: {label}" if label else "Decode tok/s vs k"
    if setups:
        faceted = base.facet(column=column, row=alt.Row("setup:N", title=" · ".join(setups)))
    else:
        faceted = base.facet(column=column)
    chart = faceted.properties(title=title)
    return [Chart(file_name(name), title, vega_spec(chart))]


def acceptance_by_position(
    rows: Sequence[Row], name: str, label: str = "", setups: Sequence[str] = ()
) -> list[Chart]:
    """Share of drafts accepted at each draft position, per drafter and k (and server setup)."""
    data = [
        {
            "workload": r.conditions.workload,
            "arm": arm_of(r, setups),
            "position": i + 1,
            "accepted": v,
            **who(r),
        }
        for r in rows
        for i, v in enumerate(r.metrics.acceptance_by_position or [])
        if v is not None
    ]
    data = means(data, "accepted")
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
            "arm": arm_of(r, setups),
            "concurrency": r.conditions.concurrency,
            "metric": metric,
            "tok/s": r.metrics.get(metric),
            **who(r),
        }
        for r in rows
        for metric in ("aggregate_tps", "per_stream_tps")
        if r.metrics.get(metric)
    ]
    data = means(data, "tok/s")
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
            **who(r),
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
            **who(r),
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
    chart = legend_toggles(
        chart,
        field,
        [channels["color"].shorthand, "prompt_tokens:Q", f"{y}:Q", "run:N", "conditions:N"],
    )
    return [Chart(file_name(name), title, vega_spec(chart))]
