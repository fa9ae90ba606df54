"""Measured (llama-server on the H200) against simulated cells: the .md report and the .jsonl records.

A measured measurement is paired with the simulated one of the same part, drafter, concurrency and
cache state whose prompt length is nearest (the server counts the chat template's tokens too).
The records are read as `RunRecord`s; a row holds the typed objects (a `Measurement`, the paired
`Metrics` and `Conditions`, an `ErrorInfo`), dumped to JSON only when the .jsonl is written.
"""

from __future__ import annotations

import datetime
import json
import statistics
import tarfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from specexp.record import ErrorInfo, Measurement, Metrics, RunRecord, find_records

NAME = "gpu-h200-llamacpp"
DECODE_METRICS = [
    "decode_tps",
    "per_stream_tps",
    "aggregate_tps",
    "ttft_s",
    "tokens_per_pass",
    "acceptance_rate",
]
PREFILL_METRICS = ["prefill_tps", "ttft_s"]
ENERGY = ["energy_j_per_token", "mean_power_w"]


def unpack(records: Path, work: Path) -> Path:
    """Extract a device run's records.tar.gz under `work`; return its sweeps folder."""
    with tarfile.open(records) as tar:
        tar.extractall(work / "measured", filter="data")
    return work / "measured" / "sweeps"


def _parts(root: Path) -> dict[str, list[RunRecord]]:
    out: dict[str, list[RunRecord]] = {}
    for path, record in find_records([root]):
        part = path.relative_to(root).parts[0]
        out.setdefault(part, []).append(record)
    return out


def _key(m: Measurement) -> tuple[Any, ...]:
    c = m.conditions
    return (c.drafter, c.concurrency, c.cache)


def _pair(measured: Measurement, simulated: list[Measurement]) -> Measurement | None:
    same = [s for s in simulated if _key(s) == _key(measured)]
    if not same:
        return None
    n = measured.conditions.prompt_tokens or 0
    return min(same, key=lambda s: abs((s.conditions.prompt_tokens or 0) - n))


def _ratios(measured: Metrics, simulated: Metrics | None) -> dict[str, float]:
    """Simulated / measured of every numeric metric that both have (and the measured one is not 0)."""
    ratio = {}
    for name in type(measured).model_fields:
        value = measured.get(name)
        other = simulated.get(name) if simulated is not None else None
        if isinstance(value, (int, float)) and isinstance(other, (int, float)) and value:
            ratio[name] = other / value
    return ratio


def _engine_decode(m: Measurement) -> float | None:
    """llama-server's own generation speed (timings.predicted_per_second), median over requests."""
    speeds = [
        t.get("predicted_per_second")
        for t in m.engine_timings or []
        if t.get("predicted_per_second")
    ]
    return statistics.median(speeds) if speeds else None


def _telemetry(m: Measurement, key: str) -> float | None:
    values = [w.get(key) for w in m.telemetry or [] if w and w.get(key) is not None]
    return statistics.median(values) if values else None


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _ratio(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}" if v < 100 else f"{v:,.0f}"


def rows(measured_root: Path, sim_root: Path) -> list[dict[str, Any]]:
    """One row per measured measurement (or failed run): measured and simulated metrics, ratios.

    `measured` is a Measurement, `simulated` the paired one's Metrics, `simulated_conditions` its
    Conditions, `error` the record's ErrorInfo (each None where there is none); `jsonable` dumps them."""
    sim = {
        part: [m for r in records for m in r.measurements]
        for part, records in _parts(sim_root).items()
    }
    out: list[dict[str, Any]] = []
    for part, records in sorted(_parts(measured_root).items()):
        for record in records:
            base = {
                "part": part,
                "run_id": record.run_id,
                "status": record.status,
                "error": record.error,
                "server_argv": record.provenance.server_argv,
                "engine_info": (  # as the engine reported it: the keys it set, no others
                    record.provenance.engine_info.model_dump(exclude_unset=True)
                    if record.provenance.engine_info is not None
                    else None
                ),
            }
            if not record.measurements:
                out.append({**base, "measured": None, "simulated": None, "ratio": {}})
            for m in record.measurements:
                s = _pair(m, sim.get(part, []))
                out.append(
                    {
                        **base,
                        "measured": m,
                        "simulated": s.metrics if s is not None else None,
                        "simulated_conditions": s.conditions if s is not None else None,
                        "ratio": _ratios(m.metrics, s.metrics if s is not None else None),
                        "engine_decode_tps": _engine_decode(m),
                    }
                )
    return out


def jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A row of `rows` as JSON data: its typed objects as `model_dump(mode="json")` (the record's own form)."""
    return {k: v.model_dump(mode="json") if isinstance(v, BaseModel) else v for k, v in row.items()}


def _table(part_rows: list[dict[str, Any]], metrics: list[str]) -> list[str]:
    head = ["drafter", "c", "prompt tok"]
    for name in metrics:
        head += [f"{name} meas", "sim", "sim/meas"]
    head += ["llama.cpp decode tok/s", "J/tok", "W", "SM MHz", "GPU mem MiB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in part_rows:
        m: Measurement | None = r["measured"]
        if m is None:
            continue
        c = m.conditions
        sim: Metrics | None = r["simulated"]
        cols = [c.drafter, str(c.concurrency), str(c.prompt_tokens)]
        for name in metrics:
            cols += [
                _fmt(m.metrics.get(name)),
                _fmt(sim.get(name) if sim is not None else None),
                _ratio(r["ratio"].get(name)),
            ]
        cols += [
            _fmt(r["engine_decode_tps"]),
            _fmt(m.metrics.energy_j_per_token),
            _fmt(m.metrics.mean_power_w),
            _fmt(_telemetry(m, "sm_clock_mhz_mean"), 4),
            _fmt(_telemetry(m, "memory_used_mib_max"), 6),
        ]
        lines.append("| " + " | ".join(cols) + " |")
    return lines


def markdown(all_rows: list[dict[str, Any]]) -> str:
    first = next((r for r in all_rows if r["engine_info"]), {})
    info = first.get("engine_info") or {}
    telemetry = next(
        (
            w
            for r in all_rows
            if r["measured"] is not None
            for w in r["measured"].telemetry or []
            if w
        ),
        {},
    )
    lines = [
        "# llama-server with CUDA on an H200: measured by specexp, beside the simulator",
        "",
        f"Written {datetime.date.today().isoformat()} by `benchmarks/gpu/llamacpp_h200.py` (`all` on the device for the "
        "measured cells, `sim report` here for the simulated ones). The raw records are in "
        f"`{NAME}.jsonl` (one line per measurement: the measured figures with their samples, engine timings "
        "and GPU telemetry per window, the server argv and engine info, and the simulated figures of the same cell).",
        "",
        f"- GPU: {', '.join(telemetry.get('devices') or ['?'])}, driver {telemetry.get('driver', '?')}; telemetry through NVML "
        f"every {telemetry.get('interval_s', '?')} s, energy by {telemetry.get('energy_method', '?')}",
        f"- llama-server: build_info `{info.get('version')}`, llama.cpp commit `{info.get('llama_cpp_commit')}` "
        f"(from {info.get('llama_cpp_commit_source')}), built with CUDA for sm_90; `-ngl {info.get('gpu_layers')}`, "
        f"host prompt cache `--cache-ram {info.get('host_prompt_cache_mib')}` unless the part says otherwise",
        "- model: the Qwen3-8B shape (36 layers, 4096 hidden, 151,936 vocabulary) in BF16 (F16 in decode-f16) with random weights "
        "(`specexp.models.shaped_gguf`); draft model: the Qwen3-0.6B shape, same vocabulary, random weights, k = 4 "
        "(random weights: acceptance is whatever two unrelated random models agree on)",
        "- simulated: `runtime=sim` with the same overrides (hardware=h200, model=qwen3-8b, the same quantization "
        "and workload); ratio = simulated / measured",
        "",
        *summary(all_rows),
    ]
    by_part: dict[str, list[dict[str, Any]]] = {}
    for r in all_rows:
        by_part.setdefault(r["part"], []).append(r)
    for part, part_rows in by_part.items():
        lines += [f"## {part}", ""]
        argv = next((r["server_argv"] for r in part_rows if r["server_argv"]), None)
        if argv:
            lines += ["```", " ".join(str(a) for a in argv), "```", ""]
        for r in part_rows:
            if r["status"] != "ok":
                err: ErrorInfo | None = r["error"]
                kind, message = (err.kind, err.message) if err is not None else (None, None)
                lines += [f"- run `{r['run_id']}`: **{r['status']}** ({kind}): {message}", ""]
        lines += _table(
            part_rows, PREFILL_METRICS if part.startswith("prefill") else DECODE_METRICS
        ) + [""]
    return "\n".join(lines) + "\n"


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}" if values else "–"


def summary(all_rows: list[dict[str, Any]]) -> list[str]:
    """Simulated/measured ranges per kind of cell, the run-to-run spread, and energy per token."""
    ok = [r for r in all_rows if r["measured"] is not None]

    def ratios(metric: str, pick: Any) -> list[float]:
        return [r["ratio"][metric] for r in ok if metric in r["ratio"] and pick(r)]

    def plain(c):
        return lambda r: r["measured"].conditions.drafter == "none" and pick_c(r, c)

    def pick_c(r, c):
        return r["measured"].conditions.concurrency == c and not r["part"].startswith("prefill")

    lines = ["## Summary", "", "| cells | metric | simulated / measured |", "|---|---|---|"]
    for c in (1, 2, 4, 8, 16, 32):
        if ratios("decode_tps", plain(c)):
            lines.append(
                f"| no drafter, concurrency {c} | decode_tps | {_span(ratios('decode_tps', plain(c)))} |"
            )
            lines.append(
                f"| no drafter, concurrency {c} | aggregate_tps | {_span(ratios('aggregate_tps', plain(c)))} |"
            )

    def cold(r):
        return r["part"] == "prefill"

    lines.append(
        f"| prefill 1k-32k, host cache off | prefill_tps | {_span(ratios('prefill_tps', cold))} |"
    )
    lines.append(
        f"| every cell, host cache off | ttft_s | {_span(ratios('ttft_s', lambda r: r['part'] != 'prefill-host-cache'))} |"
    )

    def draft(r):
        return r["measured"].conditions.drafter == "draft_model"

    lines.append(
        f"| draft model (random weights), c = 1, 8, 32 | decode_tps | {_span(ratios('decode_tps', draft))} |"
    )
    lines.append("")
    first = {
        r["measured"].conditions.concurrency: r["measured"].metrics.decode_tps
        for r in ok
        if r["part"] == "decode"
    }
    again = {
        r["measured"].conditions.concurrency: r["measured"].metrics.decode_tps
        for r in ok
        if r["part"] == "decode-again"
    }
    if first and again:
        spread = ", ".join(
            f"c = {c}: {first[c]:.1f} vs {again[c]:.1f} tok/s ({again[c] / first[c] - 1:+.0%})"
            for c in sorted(set(first) & set(again))
        )
        lines += [f"Run-to-run (the decode part on two fresh machines, decode_tps): {spread}.", ""]
    energy = [
        (
            r["part"],
            r["measured"].conditions.concurrency,
            r["measured"].metrics.energy_j_per_token,
            r["measured"].metrics.mean_power_w,
        )
        for r in ok
        if r["part"] == "decode"
    ]
    if energy:
        lines += [
            "Energy (decode part, whole GPU over each window): "
            + ", ".join(
                f"c = {c}: {e:.2f} J/token at {w:.0f} W"
                for _, c, e, w in energy
                if e is not None and w is not None
            )
            + ".",
            "",
        ]
    return lines


def host_cache(all_rows: list[dict[str, Any]]) -> list[str]:
    """Cold TTFT with llama-server's host prompt cache off (specexp's default) and on (its default)."""

    def ttft(part: str) -> dict[int, float]:
        return {
            r["measured"].conditions.prompt_tokens: r["measured"].metrics.ttft_s
            for r in all_rows
            if r["part"] == part and r["measured"] is not None and r["measured"].metrics.ttft_s
        }

    off, on = ttft("prefill"), ttft("prefill-host-cache")
    both = sorted(set(off) & set(on))
    if not both:
        return []
    lines = [
        "## Host prompt cache and cold TTFT",
        "",
        "The same cold prefill with `--cache-ram 0` (how runtime=llamacpp starts llama-server) and with "
        "`--cache-ram 8192` (llama-server's default): the host cache saves the previous request's KV to host "
        "memory before the next request is served.",
        "",
        "| prompt tok | TTFT, cache-ram 0 (s) | TTFT, cache-ram 8192 (s) | added (s) |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {off[n]:.3f} | {on[n]:.3f} | {on[n] - off[n]:+.3f} |" for n in both]
    return lines + [""]


def write(
    measured_root: Path, sim_root: Path, results_dir: Path, device_logs: list[Path] = ()
) -> list[Path]:  # type: ignore[assignment]
    all_rows = rows(measured_root, sim_root)
    results_dir.mkdir(parents=True, exist_ok=True)
    md, jsonl = results_dir / f"{NAME}.md", results_dir / f"{NAME}.jsonl"
    text = markdown(all_rows) + "\n".join(host_cache(all_rows))
    for i, device_log in enumerate(device_logs, 1):
        if device_log.is_file():
            text += (
                f"\n## Device log, call {i}\n\n```\n" + device_log.read_text().strip() + "\n```\n"
            )
    md.write_text(text)
    jsonl.write_text(
        "".join(json.dumps(jsonable(r), default=str, sort_keys=True) + "\n" for r in all_rows)
    )
    return [md, jsonl]
