"""What a context checkpoint of a hybrid model costs llama-server, from warm TTFT on the H200.

    .venv/bin/python benchmarks/llamacpp_checkpoint_cost.py

Data: benchmarks/data/h200-llamacpp-hybrid.jsonl (the Qwen3.8-27B shape in llama.cpp's qwen35
architecture, BF16, one slot: the prefix_cache workload cold then warm at 3.7k-32k tokens;
benchmarks/data/README.md). A warm request resumes from the checkpoint 516 tokens before its prompt's
end: llama-server restores it, then takes two more on the way to the end (server-context.cpp), each a
copy of the sequence's recurrent state between the GPU and host memory on its main loop. The
simulator counts the copies each cell makes; against the `llamacpp` profile with the copies free, a
warm request's extra TTFT, over its copies, gives the copy rate: `checkpoint_copy_gbps` = copies x
state bytes / extra seconds, the median of the warm cells. (The extra also holds what llama.cpp's
Gated DeltaNet kernels take over the simulator's on the 516 recomputed tokens, so the rate is a
floor.) Writes benchmarks/results/llamacpp_checkpoint_cost.md; conf/sim_engine/llamacpp.yaml takes it.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO / "benchmarks/data/h200-llamacpp-hybrid.jsonl"
OUT = REPO / "benchmarks/results/llamacpp_checkpoint_cost.md"
PROBE_GBPS = 1.0
"""A copy rate that makes each copy's count show in the simulated TTFT."""


def main() -> None:
    from specexp.roofline.costmodel import CostModel
    from specexp.sim import calibrate_engine as ce
    from specexp.sim.profile import load_profile

    cells = [c for c in ce.load_cells(DATA) if c.part == "prefix"]
    base = ce.base_spec("llamacpp", cells[0].model)
    state = CostModel.build(base.hardware, base.model, base.quantization, "auto").state_bytes
    profile = load_profile("llamacpp")
    free = ce.compare(cells, base, profile.model_copy(update={"checkpoint_copy_gbps": None}))
    probe = ce.compare(cells, base, profile.model_copy(update={"checkpoint_copy_gbps": PROBE_GBPS}))
    rows, rates = [], []
    for (cell, _, measured, sim), (_, _, _, probed) in zip(free, probe, strict=True):
        copies = round((probed - sim) * PROBE_GBPS * 1e9 / state)
        extra = measured - sim
        rate = copies * state / extra / 1e9 if copies and extra > 0 else None
        if cell.cache == "warm" and rate is not None:
            rates.append(rate)
        rows.append(f"| {cell.prompt_tokens:,} | {cell.cache} | {measured * 1e3:.0f} | {sim * 1e3:.0f} | "
                    f"{extra * 1e3:+.0f} | {copies} | {f'{rate:.2f}' if rate else '-'} |")
    lines = ["# llama-server: what a hybrid model's context checkpoint costs", "",
             f"Written by `benchmarks/llamacpp_checkpoint_cost.py` from `{DATA.relative_to(REPO)}` (see its "
             f"docstring). Recurrent state of one sequence: {state / 2**20:.0f} MiB.", "",
             "| prompt | cache | TTFT measured (ms) | simulated, copies free (ms) | extra (ms) | copies | GB/s |",
             "|---:|---|---:|---:|---:|---:|---:|", *rows, "",
             f"- `checkpoint_copy_gbps` = median over the warm cells: **{statistics.median(rates):.2f} GB/s** "
             f"({len(rates)} cells), {state / statistics.median(rates) / 1e6:.0f} ms a copy",
             "- The cold cells' extra is larger than their copies explain: llama.cpp's Gated DeltaNet prefill "
             "runs slower than the simulator's (not modelled; benchmarks/results/engine_calibration.md).", ""]
    text = "\n".join(lines)
    print(text)
    OUT.write_text(text)


if __name__ == "__main__":
    main()
