"""The report's sections, built from rows: each a list of blocks.

Rows are sorted into the studies' sections by what the run measured: decode speed by drafter
(single stream), throughput under concurrency, prefill by prompt length, and prefix-cache
reuse (cold then warm). Whatever fits none of them still gets a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.record.kinds import KINDS, measurement_kinds
from specexp.report import charts, open_loop
from specexp.report import format as fmt
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, cell, code_span, header, number, run_cell, with_spread
from specexp.report.frontier import frontier_blocks
from specexp.report.latency import latency_table
from specexp.report.tables import (
    CHART_KEYS,
    DRAFTER_KEYS,
    SPEC_KEYS,
    TITLES,
    Row,
    baselines,
    group,
    sort_rows,
    varying,
)
from specexp.report.tables import group_label as _label
from specexp.report.versus import best_of, speedup_cell, versus_best
from specexp.spec.metric_defs import shown_in
from specexp.spec.vocabulary import M
from specexp.stats.crossing import crossing


def classify(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows by the kind of measurement (specexp.record.kinds): decode, concurrency, rate (open-loop),
    prefill, prefix_cache; results.jsonl's speedups follow the same kinds."""
    out: dict[str, list[Row]] = {name: [] for name in KINDS}
    for r, section in zip(rows, measurement_kinds(rows), strict=True):
        out[section].append(r)
    return out


def _run(row: Row) -> Markdown:
    return run_cell(row.run_id, row.link)


def decode_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    """Per workload and drafter: decode and e2e tok/s, speedup, acceptance, tokens per pass."""
    if not rows:
        return []
    blocks: list[Block] = [
        Heading(TITLES["decode"]),
        Paragraph(
            Markdown(
                "Single stream on an otherwise idle server. Speedup is `decode_tps` ÷ the `drafter=none` "
                "row with every other condition equal; with repeats, figures are medians with (min–max) over "
                "the windows, a speedup carries its 95 % bootstrap interval [low–high] (over the server "
                "starts where there were several: [how sure](#how-sure-the-figures-are)), and one whose "
                "interval holds 1 is marked *within noise* rather than ranked."
            )
        ),
    ]
    metrics = shown_in("decode")
    for conditions, members in group(rows, SPEC_KEYS):
        columns = varying(members, exclude=("runtime_version", "repeats")) or ["drafter"]
        if "drafter" not in columns:
            columns = ["drafter", *columns]
        label = _label(conditions, fixed, skip=("prompt_tokens",))
        blocks.append(Heading(label or "All runs", 3))
        headers = [
            *columns,
            *(header(m) for m in metrics),
            "speedup vs none",
            "vs best",
            "identical",
            "run",
        ]
        body = []
        bases, best = baselines(members), best_of(members, "decode_tps")
        for r in sort_rows(members, columns):
            body.append(
                [number(r.get(c)) for c in columns]
                + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in metrics]
                + [
                    speedup_cell(r, bases.of(r.conditions), "decode_tps"),
                    versus_best(r, best, "decode_tps"),
                    number(r.metrics.output_identical),
                    _run(r),
                ]
            )
        blocks.append(
            TableBlock(
                headers, body, align=["l"] * len(columns) + ["r"] * (len(metrics) + 1) + ["l"] * 3
            )
        )
    for conditions, members in group(rows, CHART_KEYS):
        name = "-".join(str(v) for v in conditions.values() if v not in (None, False, True))
        label = _label(conditions, fixed)
        setups = varying(
            members,
            exclude=(
                *DRAFTER_KEYS,
                "prompt_tokens",
                "workload",
                "output_tokens",
                "ignore_eos",
                "thinking",
                "repeats",
            ),
        )
        blocks += charts.tps_vs_k(members, f"tps-vs-k-{name}", label, setups)
        blocks += charts.acceptance_by_position(members, f"acceptance-{name}", label, setups)
    return blocks


def concurrency_section(
    rows: Sequence[Row], fixed: dict[str, Any], slo: str | None = None
) -> list[Block]:
    """Aggregate and per-stream throughput vs concurrency, speedup at each level, crossover."""
    if not rows:
        return []
    blocks: list[Block] = [
        Heading(TITLES["concurrency"]),
        Paragraph(
            Markdown(
                "`concurrency` distinct requests sent at once. Speedup is `aggregate_tps` ÷ the `drafter=none` "
                "row at the same concurrency; the crossover is the first concurrency at which a drafter stops paying."
            )
        ),
    ]
    metrics = shown_in("concurrency")
    keys = (*SPEC_KEYS, "concurrency")
    for conditions, members in group(rows, keys):
        columns = [
            c for c in varying(members, exclude=("repeats", "prompt_tokens")) if c != "drafter"
        ]
        columns = (
            ["drafter", *columns]
            if "concurrency" in columns
            else ["drafter", *columns, "concurrency"]
        )
        blocks.append(Heading(_label(conditions, fixed, skip=("prompt_tokens",)) or "All runs", 3))
        body = []
        bases = baselines(members)
        for r in sort_rows(members, [c for c in columns if c != "concurrency"] + ["concurrency"]):
            body.append(
                [number(r.get(c)) for c in columns]
                + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in metrics]
                + [speedup_cell(r, bases.of(r.conditions), "aggregate_tps"), _run(r)]
            )
        blocks.append(
            TableBlock(
                [*columns, *(header(m) for m in metrics), "speedup vs none", "run"],
                body,
                align=["l"] * len(columns) + ["r"] * (len(metrics) + 1) + ["l"],
            )
        )
        blocks += latency_table(
            sort_rows(members, [c for c in columns if c != "concurrency"] + ["concurrency"]),
            columns,
        )
        blocks += _crossovers(members)
        blocks += open_loop.crossover(members, "concurrency", "", slo)
        name = "-".join(str(v) for v in conditions.values() if v not in (None, False, True))
        setups = varying(
            members, exclude=(*DRAFTER_KEYS, "prompt_tokens", "concurrency", "repeats")
        )
        label = _label(conditions, fixed, skip=("prompt_tokens",))
        blocks += charts.concurrency_scaling(members, f"concurrency-{name}", label, setups)
        blocks += frontier_blocks(members, f"frontier-{name}", label, setups)
        blocks += charts.acceptance_by_position(
            members, f"concurrency-acceptance-{name}", label, [*setups, "concurrency"]
        )
    return blocks


def _crossovers(rows: Sequence[Row]) -> list[Block]:
    """For each drafter arm: up to which concurrency it beats no drafter, and where it stops."""
    arms: dict[tuple[str, Any], list[Row]] = {}
    for r in rows:
        if r.conditions.drafter != "none":
            arms.setdefault((str(r.conditions.drafter), r.conditions.k), []).append(r)
    lines = []
    bases = baselines(rows)
    for (drafter, k), members in sorted(arms.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        points = []  # (concurrency, aggregate_tps over no drafter's), by concurrency
        for r in sorted(members, key=lambda r: r.conditions.concurrency or 1):
            base = bases.of(r.conditions)
            if base and base.metrics.aggregate_tps and r.metrics.aggregate_tps:
                points.append(
                    (r.conditions.concurrency, r.metrics.aggregate_tps / base.metrics.aggregate_tps)
                )
        if not points:
            continue
        named = fmt.arm(drafter, k)
        loss = next((i for i, (_, ratio) in enumerate(points) if ratio <= 1), None)
        if loss is None:
            lines.append(f"- {named} pays at every concurrency measured (up to {points[-1][0]}).")
        elif loss == 0:
            lines.append(
                f"- {named} is slower than no drafter from the lowest concurrency measured ({points[0][0]})."
            )
        else:
            (c0, x0), (c1, x1) = points[loss - 1], points[loss]
            near = (
                f" (the two cross near {crossing(c0 or 1, x0, c1 or 1, x1):.3g}, log-linear between them)"
                if x1 < 1
                else ""
            )
            lines.append(
                f"- {named} pays up to concurrency {c0}; "
                f"at concurrency {c1} it is slower than no drafter{near}."
            )
    return (
        [Paragraph(Markdown("Crossover:\n\n" + "\n".join(lines)))] if lines else []
    )  # drafter names escaped


def prefill_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    """Prefill throughput and TTFT by prompt length (max_tokens = 1, unique prompts)."""
    if not rows:
        return []
    blocks: list[Block] = [
        Heading("Prefill by prompt length"),
        Paragraph(
            Markdown(
                "Unique prompts with `max_tokens = 1`, so no cache can serve them: "
                "`prefill_tps` = (prompt tokens − cached) ÷ `ttft_s`."
            )
        ),
    ]
    metrics = shown_in("prefill")
    for conditions, members in group(rows, SPEC_KEYS):
        blocks.append(Heading(_label(conditions, fixed) or "All runs", 3))
        setup = [c for c in varying(members, exclude=("repeats", "prompt_tokens"))]
        body = [
            [number(r.get(c)) for c in setup]
            + [number(r.conditions.prompt_tokens)]
            + [with_spread(r.metrics.get(m), r.spread.get(m), m) for m in metrics]
            + [_run(r)]
            for r in sort_rows(members, [*setup, "prompt_tokens"])
        ]
        blocks.append(
            TableBlock(
                [*setup, "prompt_tokens", *(header(m) for m in metrics), "run"],
                body,
                align=["l"] * len(setup) + ["r"] * (len(metrics) + 1) + ["l"],
            )
        )
        blocks += latency_table(
            sort_rows(members, [*setup, "prompt_tokens"]), [*setup, "prompt_tokens"]
        )
    blocks += charts.prefill_by_length(rows, "prefill-by-length")
    return blocks


def prefix_cache_section(rows: Sequence[Row], fixed: dict[str, Any]) -> list[Block]:
    """Cold vs warm TTFT by prefix length, and the gain."""
    if not rows:
        return []
    blocks: list[Block] = [
        Heading("Prefix cache: cold vs warm"),
        Paragraph(
            Markdown(
                "A shared prefix sent cold, then re-sent with a new suffix (warm), `max_tokens = 1`. "
                "Gain = cold `ttft_s` ÷ warm `ttft_s`."
            )
        ),
    ]
    for conditions, members in group(rows, (*SPEC_KEYS, "cache", "send")):
        blocks.append(Heading(_label(conditions, fixed) or "All runs", 3))
        setup = varying(members, exclude=("repeats", "prompt_tokens", "cache", "send"))
        by_len: dict[Any, dict[Any, Row]] = {}
        for r in members:
            # cold is the first send; a warm one is the send it was (a record before `send`: the second)
            send = "cold" if r.conditions.cache == "cold" else (r.conditions.send or 2)
            by_len.setdefault(
                (tuple(str(r.get(c)) for c in setup), r.conditions.prompt_tokens or 0), {}
            )[send] = r
        sends = sorted({s for d in by_len.values() for s in d if s != "cold"})
        body = []
        for where, length in sorted(by_len):
            found = by_len[(where, length)]
            cold = found.get("cold")
            row = [
                *where,
                number(length),
                with_spread(cold.metrics.ttft_s, cold.spread.get(M.ttft_s), "ttft_s")
                if cold
                else "—",
            ]
            for send in sends:
                row += _warm_cells(cold, found.get(send))
            body.append([*row, _run(cold or next(iter(found.values())))])
        heads: list[Any] = []
        for send in sends:
            name = "warm " if len(sends) == 1 else f"send {send} "
            heads += [
                Markdown(name) + header("ttft_s"),
                "gain",
                Markdown(name) + header("cached_prompt_tokens"),
            ]
        blocks.append(
            TableBlock(
                [*setup, "prompt_tokens", Markdown("cold ") + header("ttft_s"), *heads, "run"],
                body,
                align=["l"] * len(setup) + ["r"] * (2 + 3 * len(sends)) + ["l"],
            )
        )
    blocks += charts.cold_warm_ttft(rows, "prefix-cache-ttft")
    return blocks


def _warm_cells(cold: Row | None, warm: Row | None) -> list[Any]:
    """A warm send's TTFT, its gain over the cold send, and what it found cached."""
    if warm is None:
        return ["—", "—", "—"]
    gain = "—"
    if warm.metrics.cached_prompt_tokens == 0:
        gain = "no hit: 0 cached"  # a TTFT ratio here would be noise, not a cache's gain
    elif cold and cold.metrics.ttft_s and warm.metrics.ttft_s:
        gain = f"{cold.metrics.ttft_s / warm.metrics.ttft_s:.3g}×"
    return [
        with_spread(warm.metrics.ttft_s, warm.spread.get(M.ttft_s), "ttft_s"),
        gain,
        number(warm.metrics.cached_prompt_tokens),
    ]


def failures_section(failures: Sequence[Any]) -> list[Block]:
    """Every refused, failed or skipped configuration with its cause and log tail."""
    if not failures:
        return []
    from specexp.report.blocks import CodeBlock

    blocks: list[Block] = [
        Heading(TITLES["failures"]),
        Paragraph(
            Markdown(
                "Refused servers, failures while measuring, and cells left out as meaningless."
            )
        ),
    ]
    body = [
        [
            run_cell(f.run_id, f.link),
            f.status,
            cell(f.conditions.hardware),
            cell(f.conditions.quantization),
            cell(f.conditions.drafter),
            number(f.conditions.k),
            cell(number(f.conditions.workload)),
            cell(f.error.kind),
            cell(f.error.message),
        ]
        for f in failures
    ]
    blocks.append(
        TableBlock(
            [
                "run",
                "status",
                "hardware",
                "quantization",
                "drafter",
                "k",
                "workload",
                "cause",
                "message",
            ],
            body,
        )
    )
    for f in failures:
        if f.error.log_tail:
            blocks += [
                Paragraph(Markdown(f"Log tail of {code_span(f.run_id)}:")),
                CodeBlock(f.error.log_tail),
            ]
    return blocks
