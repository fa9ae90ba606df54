"""Why, as the simulator has it: for each simulated measurement, what the simulated engine's time
went to over its timed windows (the record's `step_costs`; specexp.sim.costs), the largest named as
the figure's why (from the steps behind it: the decoding ones for a rate, the prefilling ones for
a time to first token), and how much of its time to first token it waited in the queue.

The costs: the weights' read and the matmuls' compute (the weight matmuls, on whichever side of
their roofline sets them), the KV cache's and recurrent state's read and attention's compute, the
drafter's own passes, and the engine's fixed costs (per-step and per-pass overheads, compute
graphs, kernel launches, the sampler, state checkpoints). A real engine's records cannot say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from specexp.record.escape import Markdown
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import arm, number, run_cell
from specexp.report.links import anchor
from specexp.report.tables import Row, beside_arm, sort_rows

TITLE = "Why, as the simulator has it"
COSTS = {
    "weights_read": "reading the weights",
    "matmul_compute": "the matmuls' compute",
    "kv_read": "reading the KV cache",
    "attention_compute": "attention's compute",
    "all_reduce": "the all-reduces between GPUs",
    "drafter": "the drafter's passes",
    "fixed": "fixed step costs",
}
"""Each cost of the record's `step_costs`, in words."""
QUEUED = 0.5
"""A time to first token at least this share waiting in the queue is said to be queueing's."""
MOST = 60


PREFILL_KINDS = ("prefill", "prefix_cache")
"""Measurements whose figure is a time to first token: the prefilling steps' costs say why."""


def _costs(row: Row, kind: str = "decode") -> Mapping[str, float] | None:
    """The costs of the steps behind the figure: the prefilling ones for a time to first token,
    the decoding ones for a rate (either, where the other phase took no time)."""
    phases = row.step_costs
    if not phases:
        return None
    first = "prefill" if kind in PREFILL_KINDS else "decode"
    for phase in (first, *(p for p in phases if p != first)):
        costs = phases.get(phase)
        if costs and sum(costs.values()) > 0:
            return costs
    return None


def dominant(costs: Mapping[str, float]) -> tuple[str, float]:
    """The largest cost and its share of the whole."""
    total = sum(costs.values())
    name = max(costs, key=lambda k: costs[k])
    return name, costs[name] / total


def _queued(row: Row) -> float | None:
    queue, ttft = row.metrics.ttft_queue_s, row.metrics.ttft_s
    return queue / ttft if queue is not None and ttft else None


def why(row: Row, kind: str = "decode") -> str | None:
    """The figure's why in words: its dominant cost and share, and queueing where its time to first
    token was mostly waiting; None for a measured row."""
    costs = _costs(row, kind)
    if costs is None:
        return None
    name, share = dominant(costs)
    said = f"{COSTS.get(name, name)} ({100 * share:.0f} %)"
    queued = _queued(row)
    if queued is not None and queued >= QUEUED:
        said += f"; its TTFT is {100 * queued:.0f} % queueing"
    return said


def why_lines(rows: Sequence[Row], kinds: Sequence[str]) -> list[str]:
    """The findings' line: how many simulated figures each cost bounds (`kinds`: each row's kind
    of measurement)."""
    counts = Counter(
        dominant(c)[0]
        for r, kind in zip(rows, kinds, strict=True)
        if (c := _costs(r, kind)) is not None
    )
    if not counts:
        return []
    said = ", ".join(f"{n} by {COSTS.get(k, k)}" for k, n in counts.most_common())
    return [f"- Why, as simulated: of the figures, {said} [table](#{anchor(TITLE)})"]


def why_section(rows: Sequence[Row], kinds: Sequence[str]) -> list[Block]:
    kind_of = {id(r): k for r, k in zip(rows, kinds, strict=True)}
    shown = [r for r in rows if _costs(r, kind_of[id(r)]) is not None]
    if not shown:
        return []
    columns = beside_arm(shown)
    ordered = sort_rows(shown, ["drafter", *columns])[:MOST]
    named = [  # a cost no shown figure paid (the all-reduces of one GPU) is left out
        k for k in COSTS if any((_costs(r, kind_of[id(r)]) or {}).get(k) for r in ordered)
    ]
    body = []
    for row in ordered:
        kind = kind_of[id(row)]
        costs = _costs(row, kind)
        assert costs is not None
        total = sum(costs.values())
        queued = _queued(row)
        body.append(
            [
                Markdown(arm(row.conditions.drafter, row.conditions.k, none="no drafter")),
                *(number(row.get(c)) for c in columns),
                "prefill" if kind in PREFILL_KINDS else "decode",
                why(row, kind) or "—",
                *(f"{100 * costs.get(k, 0.0) / total:.0f} %" for k in named),
                "—" if queued is None else f"{100 * queued:.0f} %",
                run_cell(row.run_id, row.link),
            ]
        )
    blocks: list[Block] = [
        Heading(TITLE),
        Paragraph(
            Markdown(
                "What the simulated engine's time went to over each measurement's timed windows (the "
                "record's `step_costs`), in the steps behind its figure (*decode*: the steps that only "
                "decoded, for a rate; *prefill*: those that took a prompt chunk, for a time to first "
                "token): the weight matmuls on the side of their roofline that sets "
                "them (reading the weights, or their compute), the KV cache's and recurrent state's "
                "read or attention's compute, the drafter's own passes, and the engine's fixed costs "
                "(per-step and per-pass overheads, compute graphs, launches, the sampler). The largest "
                "is the figure's *why*; *TTFT queued* is the share of its time to first token spent "
                "waiting to be scheduled (`ttft_queue_s` ÷ `ttft_s`)."
            )
        ),
        TableBlock(
            [
                "arm",
                *columns,
                "steps",
                "why",
                *(COSTS[k] for k in named),
                "TTFT queued",
                "run",
            ],
            body,
        ),
    ]
    if len(shown) > MOST:
        blocks.append(Paragraph(f"{len(shown) - MOST} more simulated measurement(s) not shown."))
    return blocks
