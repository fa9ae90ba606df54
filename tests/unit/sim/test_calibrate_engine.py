"""The engine-profile calibration compares each measured job with the same job simulated whole.

llama-server reuses its slots window after window, so a cell's figures depend on the windows its
server ran before: the calibration must replay a job's concurrency levels in their order, and
must not merge two servers' jobs that happen to share their settings.
"""

from __future__ import annotations

import json
from pathlib import Path

from specexp.fit import engine_cells as ce


def line(
    concurrency: int, max_model_len: int = 2048, drafter: str = "none", status: str = "ok"
) -> str:
    conditions = {
        "concurrency": concurrency,
        "prompt_tokens": 519,
        "output_tokens": 256,
        "max_model_len": max_model_len,
        "repeats": 2,
        "drafter": drafter,
    }
    metrics = {"decode_tps": 30.0, "aggregate_tps": 900.0, "ttft_s": 0.6}
    return json.dumps(
        {
            "part": "decode",
            "status": status,
            "engine_info": {"total_slots": 32},
            "measured": {"conditions": conditions, "metrics": metrics},
        }
    )


def test_a_job_ends_where_its_settings_change_or_its_concurrency_stops_rising(
    tmp_path: Path,
) -> None:
    path = tmp_path / "records.jsonl"
    rows = [
        line(1),
        line(8),
        line(32),
        line(32),
        line(32, 1024),
        line(8, 1024),
        line(4, drafter="draft_model"),
        line(16, 1024, status="failed"),
    ]
    path.write_text("\n".join(rows) + "\n")
    cells = ce.load_cells(path)
    # the drafter's and the failed job's lines are left out; the rest: four servers
    assert [(c.concurrency, c.job) for c in cells] == [
        (1, 0),
        (8, 0),
        (32, 0),
        (32, 1),
        (32, 2),
        (8, 3),
    ]
    assert all(c.slots == 32 and c.repeats == 2 for c in cells)


def test_a_job_is_simulated_with_its_levels_in_the_order_they_ran() -> None:
    cells = [ce.Cell("decode", c, 519, 256, 2048, 32, 2, {}, job=0) for c in (1, 8, 32)]
    spec = ce.job_spec(ce.base_spec("llamacpp"), cells)
    assert spec.workload.concurrency == [1, 8, 32]
    assert spec.workload.repeats == 2 and spec.workload.output_tokens == 256
    assert spec.runtime.max_num_seqs == 32 and spec.runtime.max_model_len == 2048
    assert spec.runtime.engine == "llamacpp"


def prefix_line(prompt: int, cache: str, ttft: float) -> str:
    conditions = {
        "concurrency": 1,
        "prompt_tokens": prompt,
        "output_tokens": 1,
        "max_model_len": 33792,
        "repeats": 3,
        "drafter": "none",
        "cache": cache,
    }
    return json.dumps(
        {
            "part": "prefix",
            "status": "ok",
            "engine_info": {"total_slots": 1},
            "measured": {"conditions": conditions, "metrics": {"ttft_s": ttft}},
        }
    )


def test_a_prefix_job_is_one_job_simulated_cold_then_warm_at_each_length(tmp_path: Path) -> None:
    # the server counts a warm prompt a token off its cold one; a second job starts where lengths fall
    path = tmp_path / "records.jsonl"
    rows = [
        prefix_line(3707, "cold", 0.16),
        prefix_line(3707, "warm", 0.02),
        prefix_line(16007, "cold", 0.87),
        prefix_line(16006, "warm", 0.04),
        prefix_line(3707, "cold", 0.16),
    ]
    path.write_text("\n".join(rows) + "\n")
    cells = ce.load_cells(path)
    assert [(c.cache, c.job) for c in cells] == [
        ("cold", 0),
        ("warm", 0),
        ("cold", 0),
        ("warm", 0),
        ("cold", 1),
    ]
    spec = ce.job_spec(ce.base_spec("llamacpp"), [c for c in cells if c.job == 0])
    w = spec.workload
    assert w.prompt_lengths == [3707, 16007] and w.cache == ["cold", "warm"] and w.shared_prefix
    assert w.output_tokens == 1 and w.warmup == 0
    # each cell meets its own simulated point: the warm request is served from the cache, fast
    rows = {
        (cell.prompt_tokens, cell.cache): sim
        for cell, _, _, sim in ce.compare(cells[:4], ce.base_spec("llamacpp"))
    }
    assert rows[(16006, "warm")] < rows[(16007, "cold")] / 5
    assert rows[(3707, "warm")] < rows[(16006, "warm")] < rows[(3707, "cold")]


def test_a_job_measured_before_per_point_warm_ups_is_simulated_without_them(
    tmp_path: Path,
) -> None:
    """specexp began warming each point's shape before it (workload.warmup_per_point) with the change
    that put `contaminated` in every measurement: a record without it ran its points unwarmed, and
    its job is replayed so (llama-server's slots, and with them each step's passes, depend on it)."""
    old = json.loads(line(8))
    new = json.loads(line(8))
    new["measured"]["contaminated"] = False
    path = tmp_path / "records.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    before, after = ce.load_cells(path)
    assert (before.warmed, after.warmed) == (False, True)
    base = ce.base_spec("llamacpp")
    assert ce.job_spec(base, [before]).workload.warmup_per_point is False
    assert ce.job_spec(base, [after]).workload.warmup_per_point is True
    # and it moves the figures: the warm-up leaves the server's slots in another order
    unwarmed = ce.simulate(ce.job_spec(base, [before]))
    warmed = ce.simulate(ce.job_spec(base, [after]))
    assert unwarmed != warmed
