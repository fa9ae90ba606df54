"""The engine-profile calibration compares each measured job with the same job simulated whole.

llama-server reuses its slots window after window, so a cell's figures depend on the windows its
server ran before: the calibration must replay a job's concurrency levels in their order, and
must not merge two servers' jobs that happen to share their settings.
"""

from __future__ import annotations

import json
from pathlib import Path

from specexp.sim import calibrate_engine as ce


def line(concurrency: int, max_model_len: int = 2048, drafter: str = "none", status: str = "ok") -> str:
    conditions = {"concurrency": concurrency, "prompt_tokens": 519, "output_tokens": 256,
                  "max_model_len": max_model_len, "repeats": 2, "drafter": drafter}
    metrics = {"decode_tps": 30.0, "aggregate_tps": 900.0, "ttft_s": 0.6}
    return json.dumps({"part": "decode", "status": status, "engine_info": {"total_slots": 32},
                       "measured": {"conditions": conditions, "metrics": metrics}})


def test_a_job_ends_where_its_settings_change_or_its_concurrency_stops_rising(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    rows = [line(1), line(8), line(32), line(32), line(32, 1024), line(8, 1024), line(4, drafter="draft_model"),
            line(16, 1024, status="failed")]
    path.write_text("\n".join(rows) + "\n")
    cells = ce.load_cells(path)
    # the drafter's and the failed job's lines are left out; the rest: four servers
    assert [(c.concurrency, c.job) for c in cells] == [(1, 0), (8, 0), (32, 0), (32, 1), (32, 2), (8, 3)]
    assert all(c.slots == 32 and c.repeats == 2 for c in cells)


def test_a_job_is_simulated_with_its_levels_in_the_order_they_ran() -> None:
    cells = [ce.Cell("decode", c, 519, 256, 2048, 32, 2, {}, job=0) for c in (1, 8, 32)]
    spec = ce.job_spec(ce.base_spec(), cells)
    assert spec.workload.concurrency == [1, 8, 32]
    assert spec.workload.repeats == 2 and spec.workload.output_tokens == 256
    assert spec.runtime.max_num_seqs == 32 and spec.runtime.max_model_len == 2048
    assert spec.runtime.engine == "llamacpp"
