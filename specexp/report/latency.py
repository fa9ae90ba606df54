"""The latency distribution of each row: p50 / p99 of TTFT, TPOT, chunk gap and e2e, and
whether the measuring client, not the server, set the pace (`client.bound`)."""

from __future__ import annotations

from collections.abc import Sequence

from specexp.report.blocks import Block, Paragraph, TableBlock
from specexp.report.format import Markdown, code_span, number
from specexp.report.tables import Row

COLUMNS = (
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "chunk_gap_p99_s",
    "e2e_p50_s",
    "e2e_p99_s",
)


def latency_table(rows: Sequence[Row], columns: Sequence[str]) -> list[Block]:
    """One table beside a latency table; nothing for records without distributions."""
    shown = [m for m in COLUMNS if any(r.metrics.get(m) is not None for r in rows)]
    if not shown:
        return []
    bound = any((r.client or {}).get("bound") for r in rows)
    body = [
        [number(r.get(c)) for c in columns]
        + [number(r.metrics.get(m), m) for m in shown]
        + [_client(r)]
        for r in rows
    ]
    text = Markdown(
        "Latency over every request of the repeats (seconds): `_p50_s` / `_p99_s` are percentiles, "
        "TPOT per token, chunk gap per chunk."
    )
    if bound:
        text += Markdown(
            " **Client-bound** rows: the measuring client was on CPU most of the window, sent late "
            "or read a stream's end in bulk, so their latencies include the client's queueing (see "
            "`client` in the record; "
            "`workload.client_processes` spreads a window over more processes)."
        )
    return [
        Paragraph(text),
        TableBlock(
            [*columns, *(code_span(m) for m in shown), "client"],
            body,
            align=["l"] * len(columns) + ["r"] * len(shown) + ["l"],
        ),
    ]


def _client(row: Row) -> str:
    client = row.client or {}
    if not client:
        return "—"
    share = f"CPU {client.get('busy', 0) * 100:.0f} %"
    if client.get("bulk_reads"):
        share += f", {client['bulk_reads']} read in bulk"
    return f"client-bound ({share})" if client.get("bound") else share
