"""What a hybrid model's context checkpoint costs llama-server, from its own debug log on the H200.

    .venv/bin/python benchmarks/llamacpp_checkpoint_cost.py

Data: benchmarks/data/h200-llamacpp-hybrid-log.txt, the checkpoint lines of llama-server's log (`-lv 5
--log-timestamps`) while specexp ran the prefix_cache workload (3.7k and 16k tokens, cold then warm,
three repeats) on the Qwen3.8-27B shape in BF16 (benchmarks/data/README.md). Before each prompt batch
llama-server logs its decision (`main/do_checkpoint = yes`) and, once it has copied the sequence's
recurrent state to host memory, `created context checkpoint ... size = S MiB`; a warm request logs
`checking checkpoint ...` and, once the state is back on the GPU, `restored context checkpoint`. The
time between the two lines of each pair is the copy; over its bytes it gives the profile's
`checkpoint_save_gbps` and `checkpoint_restore_gbps` (the medians). Then the prefix_cache cells of
benchmarks/data/h200-llamacpp-hybrid.jsonl simulated with and without the copies, against measured.
Writes benchmarks/results/llamacpp_checkpoint_cost.md; conf/sim_engine/llamacpp.yaml takes the rates.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
LOG = REPO / "benchmarks/data/h200-llamacpp-hybrid-log.txt"
DATA = REPO / "benchmarks/data/h200-llamacpp-hybrid.jsonl"
OUT = REPO / "benchmarks/results/llamacpp_checkpoint_cost.md"
STAMP = re.compile(r"^\d+:(\d+)\.(\d+)\.(\d+)\.(\d+) ")
SIZE = re.compile(r"size = ([\d.]+) MiB")


def seconds(line: str) -> float:
    """llama.cpp's log time stamp (minutes.seconds.milliseconds.microseconds), after grep's line number."""
    m = STAMP.match(line)
    if m is None:
        raise ValueError(f"{LOG.name}: no time stamp in {line[:60]!r}")
    minutes, secs, ms, us = (int(g) for g in m.groups())
    return minutes * 60 + secs + ms / 1e3 + us / 1e6


def copies(lines: list[str]) -> tuple[list[float], list[float], float]:
    """(save seconds, restore seconds, state MiB) of every checkpoint the log shows."""
    saves, restores, mib, began = [], [], 0.0, None
    for line in lines:
        if "main/do_checkpoint = yes" in line or "checking checkpoint" in line:
            began = seconds(line)
        elif began is not None and (
            "created context checkpoint" in line or "restored context checkpoint" in line
        ):
            (saves if "created" in line else restores).append(seconds(line) - began)
            mib = float(SIZE.search(line)[1])  # type: ignore[index]
            began = None
    return saves, restores, mib


def main() -> None:
    from specexp.fit import engine_cells as ce
    from specexp.sim.profile import load_profile

    saves, restores, mib = copies(LOG.read_text().splitlines())
    state_gb = mib * 2**20 / 1e9
    save_gbps, restore_gbps = (
        state_gb / statistics.median(saves),
        state_gb / statistics.median(restores),
    )
    cells = [c for c in ce.load_cells(DATA) if c.part == "prefix"]
    base, profile = ce.base_spec("llamacpp", cells[0].model), load_profile("llamacpp")
    free = profile.model_copy(
        update={"checkpoint_save_gbps": None, "checkpoint_restore_gbps": None}
    )
    rows = [
        f"| {cell.prompt_tokens:,} | {cell.cache} | {measured * 1e3:.0f} | {bare * 1e3:.0f} | {paid * 1e3:.0f} |"
        for (cell, _, measured, bare), (_, _, _, paid) in zip(
            ce.compare(cells, base, free), ce.compare(cells, base, profile), strict=True
        )
    ]
    lines = [
        "# llama-server: what a hybrid model's context checkpoint costs",
        "",
        f"Written by `benchmarks/llamacpp_checkpoint_cost.py` from `{LOG.relative_to(REPO)}` and "
        f"`{DATA.relative_to(REPO)}` (see its docstring). Recurrent state of one sequence: {mib:.1f} MiB.",
        "",
        f"- save (device to host): {len(saves)} copies, median **{statistics.median(saves) * 1e3:.1f} ms** "
        f"({min(saves) * 1e3:.1f}-{max(saves) * 1e3:.1f}): `checkpoint_save_gbps` **{save_gbps:.2f}**",
        f"- restore (host to device): {len(restores)} copies, median **{statistics.median(restores) * 1e3:.1f} ms** "
        f"({min(restores) * 1e3:.1f}-{max(restores) * 1e3:.1f}): `checkpoint_restore_gbps` **{restore_gbps:.1f}**",
        "",
        "The prefix_cache cells (TTFT, ms): a cold prompt takes three checkpoints (at its user message and "
        "516 and 4 tokens before its end), a warm one restores one and takes two.",
        "",
        "| prompt | cache | measured | simulated, copies free | simulated |",
        "|---:|---|---:|---:|---:|",
        *rows,
        "",
        "What the simulated cells still miss is llama.cpp's Gated DeltaNet kernels, slower than the "
        "simulator's (benchmarks/results/engine_calibration.md).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text)


if __name__ == "__main__":
    main()
