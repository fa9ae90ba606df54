"""What every chart of a report shares: a panel's size, the legend that brings a series forward,
a point's tooltip, its arm label, the averaging of runs that share a point, the file name and the
Vega-Lite spec with its rows set in as they are. `charts`, `frontier` and `open_loop` build on it."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import altair as alt

from specexp.report.tables import Row
from specexp.spec.arms import arm_label

WIDTH = 420
HEIGHT = 260
"""One panel, in pixels: legible at a report's width (two panels side by side fit 1,000 px)."""


def legend_toggles(chart: alt.Chart, field: str, tooltip: Sequence[str]) -> alt.Chart:
    """Click a legend entry to bring its series forward (the others fade); hover a point for its
    run id and conditions. In the SVG files every series is drawn in full."""
    pick = alt.selection_point(fields=[field], bind="legend")
    # typed channels: Altair need not infer them from plain values (~50 ms a chart)
    return chart.add_params(pick).encode(
        opacity=alt.Opacity(condition={"param": pick.name, "value": 1.0}, value=0.15),
        tooltip=[alt.Tooltip(t) for t in tooltip],
    )


def who(row: Row) -> dict[str, Any]:
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


def means(points: list[dict[str, Any]], value: str) -> list[dict[str, Any]]:
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


def file_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:120]


def arm_of(row: Row, setups: Sequence[str] = ()) -> str:
    arm = arm_label(row.conditions.drafter, row.conditions.k)
    return f"{setup_of(row, setups)} · {arm}" if setups else arm


def setup_of(row: Row, setups: Sequence[str]) -> str:
    """The conditions that tell this row's server apart from the others in the chart."""
    return " · ".join(str(row.get(c)) for c in setups) or "—"


VALIDATE = False
"""Whether each chart is checked against the Vega-Lite schema as it is built (a fifth of a report's
time; the report tests turn it on)."""


def schema_checks() -> AbstractContextManager[None]:
    """Altair checks every part of a chart against the schema as it is made (its debug mode, on by
    default: a third of a report's time): only where VALIDATE asks for it."""
    return alt.utils.schemapi.debug_mode(VALIDATE)


def vega_spec(chart: alt.TopLevelMixin) -> dict[str, Any]:
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
