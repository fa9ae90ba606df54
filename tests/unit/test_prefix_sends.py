"""A shared prefix sent several times (workload.cache [cold, warm, warm]): each send is a measurement
of its own (condition `send`), so a second and a third send are never pooled. On a hybrid model they
differ: the first send leaves a state where its prompt ended, the second one where it branched."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_specexp


def test_each_send_of_a_prefix_is_its_own_measurement(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    done = run_specexp(
        *[
            "workload=prefix_cache",
            "workload.cache=[cold,warm,warm]",
            "workload.prompt_lengths=[16000]",
            "workload.repeats=1",
            "model=qwen3.8-27b",
            "hardware=h200",
            "quantization=bf16",
            "runtime.engine=sglang",
            f"hydra.sweep.dir={out}",
            "-m",
        ]
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = out.glob("*/result.json")
    measurements = json.loads(result.read_text())["measurements"]
    sends = {m["conditions"]["send"]: m for m in measurements}
    assert sorted(sends) == [1, 2, 3]
    assert [sends[n]["conditions"]["cache"] for n in (1, 2, 3)] == ["cold", "warm", "warm"]
    cached = [sends[n]["metrics"]["cached_prompt_tokens"] for n in (1, 2, 3)]
    # the second send resumes only where the first's prefill chunk kept a state; the third where the
    # second branched from the first: more
    assert cached[0] == 0 and 0 < cached[1] < cached[2]
    requests = [
        json.loads(line) for line in (result.parent / "requests.jsonl").read_text().splitlines()
    ]
    timed = [r for r in requests if not r["warmup"]]
    assert {r.get("send") for r in timed} == {1, 2, 3}
    # every send is a request of its own: the records join on request ids
    assert len({r["request_id"] for r in timed}) == len(timed) == 3
    # the report's prefix-cache table gives each warm send its own TTFT, gain and hit
    report = (out / "measurements.md").read_text()
    table = report.split("## Prefix cache", 1)[1]
    assert "send 2 TTFT" in table and "send 3 cached" in table
    row = next(line for line in table.splitlines() if line.startswith("| 16,000"))
    assert row.count("×") == 2
