"""measurements.md from records only: a simulated banner, one row per configuration with the
metric columns named by their definitions, speedups against drafter=none, and the runs that
did not complete, with text from servers kept inside its table cell."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from specexp.record import SCHEMA, RunRecord, find_records, write_record
from specexp.report.write import write_report

CONDITIONS: dict[str, Any] = {
    "hardware": "dgx_spark",
    "gpu_count": 1,
    "gpu_shared": False,
    "gpu_memory_utilization": 0.9,
    "model": "qwen3.8-27b",
    "quantization": "fp8",
    "kv_cache_dtype": "auto",
    "runtime": "sim",
    "max_model_len": 262144,
    "runtime_version": "specexp-sim 0.1.0",
    "drafter": "none",
    "k": None,
    "drafter_config": None,
    "draft_model": None,
    "workload": "fresh_generation@1",
    "prompt_tokens": 32,
    "output_tokens": 400,
    "ignore_eos": True,
    "concurrency": 1,
    "cache": "cold",
    "prefix_caching": True,
    "thinking": False,
    "temperature": 0.0,
    "repeats": 1,
    "source": "simulated",
}


def result(
    run_id: str,
    drafter: str = "none",
    k: int | None = None,
    decode: float = 10.0,
    status: str = "ok",
    error: dict[str, Any] | None = None,
    **conditions: Any,
) -> dict[str, Any]:
    c = {**CONDITIONS, "drafter": drafter, "k": k, **conditions}
    spec = drafter != "none"
    metrics = {
        "decode_tps": decode,
        "e2e_tps": decode * 0.97,
        "ttft_s": 0.137,
        "tpot_s": 1 / decode,
        "aggregate_tps": decode,
        "per_stream_tps": decode,
        "acceptance_rate": 0.79 if spec else None,
        "acceptance_by_position": [0.9, 0.79, 0.68] if spec else None,
        "tokens_per_pass": 3.37 if spec else None,
    }
    measurements = (
        []
        if status != "ok"
        else [
            {
                "conditions": c,
                "metrics": metrics,
                "token_source": "server",
                "samples": {"decode_tps": [decode]},
            }
        ]
    )
    return {
        "schema": SCHEMA,
        "schema_version": 2,
        "run_id": run_id,
        "status": status,
        "error": error,
        "conditions": {**c, "prompt_tokens": None, "concurrency": None, "cache": None},
        "provenance": {},
        "measurements": measurements,
    }


def render(tmp_path: Path, results: list[dict[str, Any]]) -> str:
    for r in results:
        write_record(tmp_path / "runs" / r["run_id"], RunRecord.model_validate(r))
    (out,) = write_report(find_records([tmp_path / "runs"]), tmp_path / "measurements.md")
    return out.read_text(encoding="utf-8")


def split_cells(line: str) -> list[str]:
    """Cells of a Markdown table line; an escaped pipe (\\|) stays inside its cell."""
    inner = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    return [c.strip() for c in re.split(r"(?<!\\)\|", inner)]


def md_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every Markdown table: (header cells, row cells); the separator line is dropped."""
    found, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2:
            found.append((split_cells(block[0]), [split_cells(x) for x in block[2:]]))
        block = []
    return found


def run_id(cell: str) -> str:
    m = re.search(r"`([0-9a-z]+)`", cell)
    assert m, cell
    return m.group(1)


def decode_table(text: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The table with a decode_tps column: its header and its rows by run id, cells by header."""
    [(header, body)] = [t for t in md_tables(text) if any("`decode_tps`" in h for h in t[0])]
    assert header[-1] == "run"
    return header, {run_id(r[-1]): dict(zip(header, r, strict=True)) for r in body}


def column(header: list[str], name: str) -> str:
    return next(h for h in header if f"`{name}`" in h or h.startswith(name))


SPEC_COLUMNS = (
    "decode_tps",
    "e2e_tps",
    "ttft_s",
    "acceptance_rate",
    "acceptance_by_position",
    "tokens_per_pass",
)


def test_simulated_figures_say_so(tmp_path: Path) -> None:
    text = render(tmp_path, [result("aaaaaa01")])
    assert any("simulat" in line.lower() for line in text.splitlines()[:5])


def test_one_row_per_configuration_with_the_speculation_columns(tmp_path: Path) -> None:
    results = [
        result("base0001"),
        result("mtp00003", "mtp", 3, 20.0),
        result("mtp00008", "mtp", 8, 25.0),
        result("dsp00007", "dspark", 7, 22.0),
    ]
    header, table = decode_table(render(tmp_path, results))
    assert set(table) == {"base0001", "mtp00003", "mtp00008", "dsp00007"}
    for metric in SPEC_COLUMNS:
        assert any(f"`{metric}`" in cell for cell in header), metric
    assert (table["mtp00003"]["drafter"], table["mtp00003"]["k"]) == ("mtp", "3")
    assert table["mtp00008"][column(header, "decode_tps")] == "25.0"


def test_acceptance_is_printed_as_percent_by_position(tmp_path: Path) -> None:
    header, table = decode_table(
        render(tmp_path, [result("base0001"), result("mtp00003", "mtp", 3, 20.0)])
    )
    row = table["mtp00003"]
    assert row[column(header, "acceptance_rate")] == "79.0 %"
    assert row[column(header, "acceptance_by_position")] == "90.0 % / 79.0 % / 68.0 %"
    assert float(row[column(header, "tokens_per_pass")]) == pytest.approx(3.37, abs=0.05)


def test_speedup_against_the_matching_drafter_none_row(tmp_path: Path) -> None:
    header, table = decode_table(
        render(tmp_path, [result("base0001", decode=10.0), result("mtp00003", "mtp", 3, 25.0)])
    )
    speedup = column(header, "speedup")
    assert table["mtp00003"][speedup].startswith("2.50×")
    assert table["base0001"][speedup] == "baseline"


def test_no_speedup_without_a_matching_baseline(tmp_path: Path) -> None:
    # The baseline ran another workload: it shares no conditions with the MTP row.
    results = [result("base0001", workload="edit_heavy@1"), result("mtp00003", "mtp", 3, 25.0)]
    text = render(tmp_path, results)
    assert any("mtp00003" in c for _, body in md_tables(text) for r in body for c in r)
    for header, body in md_tables(text):
        if any(h.startswith("speedup") for h in header):
            for cells in body:
                assert "×" not in cells[header.index(column(header, "speedup"))], cells


def test_conditions_shared_by_every_row_are_stated_once(tmp_path: Path) -> None:
    text = render(tmp_path, [result("base0001"), result("mtp00003", "mtp", 3, 20.0)])
    shared = {
        r[0].strip("`"): r[1]
        for h, body in md_tables(text)
        if h[:2] == ["condition", "value"]
        for r in body
    }
    assert shared["hardware"] == "dgx_spark" and shared["quantization"] == "fp8"
    assert shared["source"] == "simulated" and shared["output_tokens"] == "400"
    header, _ = decode_table(text)
    assert "hardware" not in header and "quantization" not in header


@pytest.mark.parametrize("status", ["failed", "refused", "skipped"])
def test_runs_that_did_not_complete_are_listed_with_their_cause(
    tmp_path: Path, status: str
) -> None:
    message = "KV cache needs 40.2 GiB | only 12.0 GiB free\nsecond line <b>"
    bad = result(
        "bad00001",
        "mtp",
        8,
        status=status,
        error={"kind": "out_of_memory", "message": message, "log_tail": ""},
    )
    text = render(tmp_path, [result("base0001"), bad])
    _, table = decode_table(text)
    assert "bad00001" not in table
    listed = [
        (h, r)
        for h, body in md_tables(text)
        for r in body
        if "out_of_memory" in r and any("bad00001" in c for c in r)
    ]
    assert len(listed) == 1, "the incomplete run and its cause are listed once"
    header, cells = listed[0]
    assert len(cells) == len(header), "text from the server broke the table"
    assert status in cells
    [shown] = [c for c in cells if "40.2 GiB" in c]
    assert "12.0 GiB free" in shown and "second line" in shown and "<b>" not in shown


def test_mixed_sources_are_flagged(tmp_path: Path) -> None:
    measured = result(
        "meas0001", "mtp", 3, 18.0, source="measured", runtime="vllm", runtime_version="0.11.0"
    )
    text = render(tmp_path, [result("base0001"), measured])
    top = "\n".join(text.splitlines()[:5]).lower()
    assert "simulat" in top and "measured" in top


def test_a_concurrency_table_has_its_latency_distribution_and_names_a_client_bound_row(
    tmp_path: Path,
) -> None:
    results = []
    for i, (c, bound) in enumerate(((2, False), (64, True))):
        r = result(f"conc000{i}", concurrency=c)
        m = r["measurements"][0]
        m["metrics"].update(
            {
                "ttft_p50_s": 0.05 * c,
                "ttft_p99_s": 0.08 * c,
                "tpot_p50_s": 0.01,
                "tpot_p99_s": 0.02,
                "e2e_p99_s": 4.0,
            }
        )
        m["client"] = {
            "processes": 1,
            "cpu_s": 1.0,
            "busy": 0.95 if bound else 0.1,
            "send_lag_p99_s": 0.0,
            "send_lag_max_s": 0.0,
            "bound": bound,
        }
        results.append(r)
    results.append(result("conc0002", concurrency=8))  # an older record: no distribution, no client
    text = render(tmp_path, results)
    [(header, body)] = [t for t in md_tables(text) if "`ttft_p99_s`" in t[0]]
    rows = {r[header.index("concurrency")]: dict(zip(header, r, strict=True)) for r in body}
    assert rows["64"]["`ttft_p99_s`"] == "5.120" and rows["2"]["`ttft_p50_s`"] == "0.100"
    assert rows["64"]["client"].startswith("client-bound") and not rows["2"]["client"].startswith(
        "client-bound"
    )
    assert rows["8"]["`ttft_p50_s`"] == "—" and rows["8"]["client"] == "—"
    assert "**Client-bound**" in text


def test_a_workloads_version_is_written_as_a_version_not_as_a_concurrency() -> None:
    from specexp.report.format import number

    assert number("fresh_generation@1") == "fresh_generation v1"
    assert number("agentic_sessions@12") == "agentic_sessions v12"
    for plain in ("qwen3-8b", "user@host", "a@b@1", "none"):
        assert number(plain) == plain  # only a versioned id is rewritten
