"""The method section, written from the records' conditions and provenance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.record import RunRecord
from specexp.record.schema import ConfigOption
from specexp.report.blocks import Block, Heading, Paragraph, TableBlock
from specexp.report.format import Markdown, cell, code_span, number
from specexp.report.tables import Row, fixed_conditions
from specexp.spec.vocabulary import CONDITIONS


def _option(results: Sequence[RunRecord], group: str, name: Any) -> ConfigOption:
    """The option `name` of config `group` as a job composed it (its description, its checkpoint)."""
    for r in results:
        option = r.provenance.option(group)
        if option.name == name:
            return option
    return ConfigOption(None, None, None)


def _values(rows: Sequence[Row], key: str) -> list[Any]:
    seen: list[Any] = []
    for r in rows:
        if r.get(key) not in seen:
            seen.append(r.get(key))
    return seen


def method_section(rows: Sequence[Row], results: Sequence[RunRecord]) -> list[Block]:
    if not rows:
        return [Heading("Method"), Paragraph("No run produced a measurement.")]
    lines = []
    for hw in _values(rows, "hardware"):
        desc = _option(results, "hardware", hw).description
        lines.append(f"- **Hardware**: {code_span(hw)}" + (f" ({cell(desc)})" if desc else ""))
    for model in _values(rows, "model"):
        hf = _option(results, "model", model).hf_id
        lines.append(f"- **Model**: {code_span(model)}" + (f" ({cell(hf)})" if hf else ""))
    for q in _values(rows, "quantization"):
        desc = _option(results, "quantization", q).description
        lines.append(f"- **Weights**: {code_span(q)}" + (f": {cell(desc)}" if desc else ""))
    runtimes = {(r.conditions.runtime, r.conditions.runtime_version) for r in rows}
    lines.append(
        "- **Runtime**: "
        + ", ".join(
            f"{code_span(n)} {cell(v or 'version unknown')}" for n, v in sorted(runtimes, key=str)
        )
    )
    lines.extend(_simulated_engines(results))
    arms: dict[str, list[Any]] = {}
    for r in rows:
        arms.setdefault(str(r.conditions.drafter), [])
        if r.conditions.k is not None and r.conditions.k not in arms[str(r.conditions.drafter)]:
            arms[str(r.conditions.drafter)].append(r.conditions.k)
    lines.append(
        "- **Drafters**: "
        + "; ".join(
            code_span(d) + (f" k = {', '.join(str(k) for k in sorted(ks))}" if ks else "")
            for d, ks in sorted(arms.items())
        )
    )
    for w in _values(rows, "workload"):
        members = [r for r in rows if r.conditions.workload == w]
        prompts = sorted(
            {r.conditions.prompt_tokens for r in members if r.conditions.prompt_tokens is not None}
        )
        outputs = sorted(
            {r.conditions.output_tokens for r in members if r.conditions.output_tokens is not None}
        )
        conc = sorted(
            {r.conditions.concurrency for r in members if r.conditions.concurrency is not None}
        )
        caches = _values(members, "cache")
        eos = (
            "forced (`ignore_eos`)"
            if all(r.conditions.ignore_eos for r in members)
            else "to EOS or the limit"
        )
        lines.append(
            f"- **Workload** {code_span(number(w))}: prompt {_span(prompts)} tokens (as the server counts them), "
            f"output {_span(outputs)} tokens {eos}, concurrency {_span(conc)}, cache {', '.join(cell(c) for c in caches)}"
        )
    lines.extend(_filler_warnings(rows, results))
    temps = _values(rows, "temperature")
    thinking = _values(rows, "thinking")
    repeats = sorted({r.conditions.repeats for r in rows if r.conditions.repeats is not None})
    starts = sorted({r.conditions.server_starts or 1 for r in rows})
    lines.append(
        f"- **Sampling**: temperature {', '.join(number(t) for t in temps)}; thinking "
        f"{', '.join('on' if t else 'off' for t in thinking)}; repeats {_span(repeats)} per figure"
        + (f", on {_span(starts)} fresh server starts" if starts != [1] else ", on one server")
    )
    if repeats and max(repeats) < 2:
        lines.append(
            "- **How sure**: one window per figure: no interval, and no speedup is judged within "
            "noise or beyond it (`workload.repeats`, `workload.server_starts`)"
        )
    else:
        lines.append(
            "- **How sure**: a figure is the median of its windows, shown with their (min–max); its 95 % "
            "interval, and a speedup's, is a bootstrap over "
            + (
                "its windows on one server: it does not cover what restarting the server moves "
                "(`workload.server_starts`)"
                if starts == [1]
                else "its server starts (each start's windows drawn together)"
                + (", or its windows where it ran on one server" if 1 in starts else "")
            )
            + "; *within noise* means a speedup's interval holds 1"
        )
    kv = sorted({int(r.metrics.kv_cache_tokens) for r in rows if r.metrics.kv_cache_tokens})
    if kv:
        lines.append(
            f"- **KV cache capacity** (`kv_cache_tokens`, as the engine reported it at start): {_span(kv)} tokens"
        )
    simulated = sum(1 for r in rows if r.conditions.source == "simulated")
    if simulated == len(rows):
        lines.append(
            "- **Source**: every figure is **simulated** by specexp's simulator, not measured. Acceptance "
            "is drawn per verify step from each drafter's calibrated model by a seeded low-discrepancy "
            f"sequence, so even a short window{_shortest_window(rows)} lands within about a point of "
            "the calibration figures, and cells of one sweep share their draws (common random numbers)."
        )
    elif simulated:
        lines.append(
            f"- **Source**: {simulated} of {len(rows)} figures are **simulated** (their `source` column says so); "
            "the others were measured."
        )
    else:
        lines.append("- **Source**: every figure was measured on a real server.")
    fixed = fixed_conditions(rows)
    # a condition added later (turn, category) that no figure has says nothing: left out of the table
    fixed = {k: v for k, v in fixed.items() if v is not None or not CONDITIONS[k].absent_is_null}
    table = TableBlock(
        ["condition", "value"],
        [[code_span(k), cell(number(v))] for k, v in fixed.items()],
        caption="Conditions shared by every figure on this page",
    )
    return [
        Heading("Method"),
        Paragraph(Markdown("\n".join(lines))),  # every value in it escaped as written
        Paragraph(
            "Conditions shared by every figure on this page (the tables show only what varies):"
        ),
        table,
    ]


def _filler_warnings(rows: Sequence[Row], results: Sequence[RunRecord]) -> list[str]:
    """A warning per workload whose drafting figures come from random words, and per weights kind
    that is not trained: acceptance on either says nothing about real traffic."""
    out = []
    drafted = [
        r
        for r in rows
        if r.conditions.drafter not in (None, "none") and r.metrics.acceptance_rate is not None
    ]
    for w in _values(drafted, "workload"):
        name = str(w).split("@")[0]
        source = next(
            (p for r in results if (p := r.provenance.prompt_source()).workload == name), None
        )
        random_text = any(
            r.conditions.prompt_text == "random" for r in drafted if r.conditions.workload == w
        ) or (source is not None and "filler" in (source.material, source.turn_material))
        if random_text and not (source is not None and source.dataset_file):
            out.append(
                f"- **Warning**: {code_span(number(w))} measures drafting on random words "
                "(`prompt_text: random`); acceptance on such prompts overstates real traffic "
                "(use `workload.material=prose` or real prompts with `workload.dataset_file`)"
            )
    for kind in ("random", "dummy"):
        if any(r.conditions.weights == kind for r in drafted):
            out.append(
                f"- **Warning**: acceptance here was measured on {kind} weights "
                "(`weights: " + kind + "`): it exercises the engine, and says nothing about "
                "how a drafter does on real text (docs/models.md)"
            )
    return out


def _simulated_engines(results: Sequence[RunRecord]) -> list[str]:
    """One line per (engine profile, device) the simulator imitated, with what its figures rest
    on: a profile not calibrated for the device says so."""
    seen: dict[tuple[str, str], str] = {}
    for r in results:
        info = r.provenance.engine_info
        if info is not None and info.engine_profile:
            key = (info.engine_profile, str(r.conditions.hardware))
            seen[key] = info.engine_calibration or "uncalibrated"
    return [
        f"- **Simulated engine** {code_span(profile)} on {code_span(hw)}: "
        + (
            "**uncalibrated** (its engine figures are assumed for this device)"
            if cal == "uncalibrated"
            else f"calibrated to {cell(cal)}"
        )
        for (profile, hw), cal in sorted(seen.items())
    ]


def _span(values: Sequence[Any]) -> str:
    if not values:
        return "—"
    if len(values) <= 4:
        return ", ".join(number(v) for v in values)
    return f"{number(values[0])}–{number(values[-1])} ({len(values)} values)"


def _shortest_window(rows: Sequence[Row]) -> str:
    """The parenthesis naming the sweep's shortest drafting window ("the shortest here: N tokens,
    ~M drafts"): a drafter row's requested output times its concurrency, over its tokens per pass.
    Empty where no drafter row gives all three."""
    windows = [
        (
            c.output_tokens * c.concurrency,
            c.output_tokens * c.concurrency / r.metrics.tokens_per_pass,
        )
        for r in rows
        if (c := r.conditions).drafter != "none"
        and c.output_tokens
        and c.concurrency
        and r.metrics.tokens_per_pass
    ]
    if not windows:
        return ""
    tokens, drafts = min(windows)
    return f" (the shortest here: {tokens:,} tokens, ~{drafts:,.0f} drafts)"
