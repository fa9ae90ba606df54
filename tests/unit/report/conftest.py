"""The report tests build every chart against the Vega-Lite schema (a sweep skips that check)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def validated_charts() -> Iterator[None]:
    from specexp.report import chart_parts

    chart_parts.VALIDATE = True
    yield
    chart_parts.VALIDATE = False
