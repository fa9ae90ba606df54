"""measurements.md from records only: a simulated banner, one row per configuration with the
metric columns named by their definitions, speedups against drafter=none, and the runs that
did not complete, with text from servers kept inside its table cell."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from specexp.record import SCHEMA, write_result
from specexp.report.markdown import write_measurements

CONDITIONS: dict[str, Any] = {
    "hardware": "dgx_spark", "gpu_count": 1, "gpu_shared": False, "gpu_memory_utilization": 0.9,
    "model": "qwen3.8-27b", "quantization": "fp8", "kv_cache_dtype": "auto", "runtime": "sim",
    "runtime_version": "specexp-sim 0.1.0", "drafter": "none", "k": None, "drafter_config": None,
    "workload": "fresh_generation@1", "prompt_tokens": 32, "output_tokens": 400, "ignore_eos": True,
    "concurrency": 1, "cache": "cold", "prefix_caching": True, "thinking": False, "temperature": 0.0,
    "repeats": 1, "source": "simulated",
}


def result(run_id: str, drafter: str = "none", k: int | None = None, decode: float = 10.0,
           status: str = "ok", error: dict[str, Any] | None = None, **conditions: Any) -> dict[str, Any]:
    c = {**CONDITIONS, "drafter": drafter, "k": k, **conditions}
    spec = drafter != "none"
    metrics = {
        "decode_tps": decode, "e2e_tps": decode * 0.97, "ttft_s": 0.137, "tpot_s": 1 / decode,
        "aggregate_tps": decode, "per_stream_tps": decode,
        "acceptance_rate": 0.79 if spec else None,
        "acceptance_by_position": [0.9, 0.79, 0.68] if spec else None,
        "tokens_per_pass": 3.37 if spec else None,
    }
    measurements = [] if status != "ok" else [
        {"conditions": c, "metrics": metrics, "token_source": "server", "samples": {"decode_tps": [decode]}}
    ]
    return {"schema": SCHEMA, "run_id": run_id, "status": status, "error": error,
            "conditions": {**c, "prompt_tokens": None, "concurrency": None, "cache": None},
            "provenance": {}, "measurements": measurements}


def render(tmp_path: Path, results: list[dict[str, Any]]) -> str:
    for r in results:
        write_result(tmp_path / "runs" / r["run_id"], json.loads(json.dumps(r)))
    out = write_measurements([tmp_path / "runs"], tmp_path / "measurements.md")
    return out.read_text(encoding="utf-8")


def rows(text: str) -> dict[str, list[str]]:
    """Table rows by the run id in their last cell."""
    found = {}
    for line in text.splitlines():
        m = re.search(r"`([0-9a-z]{6,})` \|\s*$", line)
        if line.startswith("|") and m:
            found[m.group(1)] = [c.strip() for c in line.strip().strip("|").split("|")]
    return found


def header_of(text: str, first: str) -> list[str]:
    line = next(x for x in text.splitlines() if x.startswith(f"| {first} |"))
    return [c.strip() for c in line.strip().strip("|").split("|")]


SPEC_COLUMNS = ("decode_tps", "e2e_tps", "ttft_s", "acceptance_rate", "acceptance_by_position", "tokens_per_pass")


def test_simulated_figures_say_so(tmp_path: Path) -> None:
    text = render(tmp_path, [result("aaaaaa01")])
    assert any("simulat" in line.lower() for line in text.splitlines()[:5])


def test_one_row_per_configuration_with_the_speculation_columns(tmp_path: Path) -> None:
    results = [result("base0001"), result("mtp00003", "mtp", 3, 20.0), result("mtp00008", "mtp", 8, 25.0),
               result("dsp00007", "dspark", 7, 22.0)]
    text = render(tmp_path, results)
    table = rows(text)
    assert set(table) == {"base0001", "mtp00003", "mtp00008", "dsp00007"}
    header = header_of(text, "drafter")
    for metric in SPEC_COLUMNS:
        assert any(f"`{metric}`" in cell for cell in header), metric
    assert all(len(cells) == len(header) for cells in table.values())
    assert table["mtp00003"][:2] == ["mtp", "3"]


def test_acceptance_is_printed_as_percent_by_position(tmp_path: Path) -> None:
    text = render(tmp_path, [result("base0001"), result("mtp00003", "mtp", 3, 20.0)])
    row = " | ".join(rows(text)["mtp00003"])
    assert "79.0 %" in row
    assert "90.0 % / 79.0 % / 68.0 %" in row


def test_speedup_against_the_matching_drafter_none_row(tmp_path: Path) -> None:
    text = render(tmp_path, [result("base0001", decode=10.0), result("mtp00003", "mtp", 3, 25.0)])
    table = rows(text)
    assert any("2.50" in cell for cell in table["mtp00003"])
    assert any("baseline" in cell for cell in table["base0001"])


def test_no_speedup_without_a_matching_baseline(tmp_path: Path) -> None:
    text = render(tmp_path, [result("mtp00003", "mtp", 3, 25.0), result("dsp00007", "dspark", 7, 20.0)])
    assert "×" not in "".join(" ".join(c) for c in rows(text).values())
    assert "drafter=none" in text  # says how to get one


def test_conditions_shared_by_every_row_are_stated_once(tmp_path: Path) -> None:
    text = render(tmp_path, [result("base0001"), result("mtp00003", "mtp", 3, 20.0)])
    for key, value in (("hardware", "dgx_spark"), ("quantization", "fp8"), ("source", "simulated")):
        assert re.search(rf"`{key}`.*{value}", text), key
    header = header_of(text, "drafter")
    assert "hardware" not in header and "quantization" not in header


@pytest.mark.parametrize("status", ["failed", "refused", "skipped"])
def test_runs_that_did_not_complete_are_listed_with_their_cause(tmp_path: Path, status: str) -> None:
    message = "KV cache needs 40.2 GiB | only 12.0 GiB free\nsecond line <b>"
    bad = result("bad00001", "mtp", 8, status=status,
                 error={"kind": "out_of_memory", "message": message, "log_tail": ""})
    text = render(tmp_path, [result("base0001"), bad])
    lines = [x for x in text.splitlines() if "bad00001" in x]
    assert len(lines) == 1, "one table row per incomplete run, even when its message has a newline"
    line = lines[0]
    assert status in line and "out_of_memory" in line
    assert "40.2 GiB" in line and "12.0 GiB free" in line
    assert "<b>" not in line
    header = next(x for x in text.splitlines() if x.startswith("| run | status"))
    unescaped = re.split(r"(?<!\\)\|", line.strip())
    assert len(unescaped) == len(header.strip().split("|")), "a '|' in the message broke the table"


def test_mixed_sources_are_flagged(tmp_path: Path) -> None:
    measured = result("meas0001", "mtp", 3, 18.0, source="measured", runtime="vllm", runtime_version="0.11.0")
    text = render(tmp_path, [result("base0001"), measured])
    top = "\n".join(text.splitlines()[:5]).lower()
    assert "simulat" in top and "measured" in top
