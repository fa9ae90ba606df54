"""Where the `sglang` profile keeps a hybrid model's recurrent states (hybrid_states chunk_floor, as
SGLang 0.5.12 kept them on the H200 under extra_buffer): each prefill chunk's end floored to the
64-token grid, and the branch checkpoint of a request whose match ran past its state."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_specexp


def sends(tmp_path: Path, length: int) -> list[float]:
    out = tmp_path / f"p{length}"
    done = run_specexp(
        "-m",
        "workload=prefix_cache",
        "workload.cache=[cold,warm,warm]",
        f"workload.prompt_lengths=[{length}]",
        "workload.repeats=1",
        "model=qwen3.8-27b",
        "hardware=h200",
        "quantization=bf16",
        "runtime.engine=sglang",
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (result,) = out.glob("*/result.json")
    rows = json.loads(result.read_text())["measurements"]
    by_send = {m["conditions"]["send"]: m["metrics"]["cached_prompt_tokens"] for m in rows}
    return [by_send[n] for n in (1, 2, 3)]


def test_a_prompt_keeps_its_state_floored_to_the_grid(tmp_path: Path) -> None:
    # 3,700 = 57 x 64 + 52: the first send keeps its state at 3,648, inside what a prompt with a new
    # 16-token suffix shares, so the second send resumes there
    assert sends(tmp_path, 3700) == [0, 57 * 64, 57 * 64]


def test_a_long_prompt_resumes_at_its_first_chunks_end(tmp_path: Path) -> None:
    # 16,000 tokens prefill in chunks of 8,192: the first chunk's end is on the grid
    assert sends(tmp_path, 16000) == [0, 8192, (16000 - 16) // 64 * 64]
