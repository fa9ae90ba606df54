"""Third parties' prefills of the studies' model on the studies' two machines, beside the simulator.

    .venv/bin/python benchmarks/third_party_prefill.py [--fit-spark]

Each cell is one published first-token time of Qwen3.8-27B (or Qwen3.5-27B, the same layout) served by
vLLM on a DGX Spark or an RTX A6000: a cold prompt, or the same prompt sent again once its first send
is cached (warm). The simulator is sent the same prompt length, quantization, drafter, chunk budget and
KV-cache type (`runtime=sim runtime.engine=vllm`; a warm cell as the `prefix_cache` workload's second
send) and the error is printed against the TTFT target (25 %). `--fit-spark` also searches the Spark's
matmul share (`hardware.achieved.compute`) for the least rms error over its stock-configuration cells,
with its attention share held at its hardware file's (taken from other measurements), and shows both shares fitted
freely for comparison. docs/studies.md ("The Spark-A6000 prefill crossover")
reads these figures. Writes benchmarks/results/third_party_prefill.md.
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from specexp.fit.engine_cells import simulate
from specexp.run.compose import build_spec

REPO = Path(__file__).resolve().parents[1]
TTFT_TARGET = 0.25


@dataclass(frozen=True)
class Cell:
    """One published prefill, cold or warm: the prompts' lengths (server-counted) and first-token times."""

    source: str
    hardware: str
    quantization: str
    drafter: str
    k: int | None
    chunk_tokens: int
    """vLLM's `--max-num-batched-tokens` as the source ran it."""
    sends: tuple[tuple[int, float], ...]
    """(prompt tokens, TTFT in seconds) of each send."""
    stock: bool
    """A stock configuration (no tuning of vLLM's kernels for the machine)."""
    cache: str = "cold"
    """`warm`: each send's prompt was sent once before, and is cached."""
    kv_cache_dtype: str = "auto"
    """The KV cache's type as vLLM resolved it (unsloth's NVFP4 checkpoint carries an FP8 scheme)."""

    @property
    def prompt_tokens(self) -> int:
        return round(statistics.median(n for n, _ in self.sends))

    @property
    def ttft_s(self) -> float:
        return statistics.median(t for _, t in self.sends)

    @property
    def label(self) -> str:
        arm = self.drafter if self.k is None else f"{self.drafter} k={self.k}"
        kv = "" if self.kv_cache_dtype == "auto" else f", {self.kv_cache_dtype} KV cache"
        return (
            f"{self.hardware} {self.quantization} {arm}, {self.chunk_tokens:,}-token chunks{kv}, "
            f"{self.cache}"
        )


def atlas_run(
    run: str,
    drafter: str,
    k: int,
    chunk_tokens: int,
    cold: tuple[tuple[int, float], ...],
    warm: tuple[tuple[int, float], ...],
) -> tuple[Cell, Cell]:
    """One inference-atlas run's cold and warm cells: a Spark, NVFP4 weights, an FP8 KV cache (the
    checkpoint's scheme), a stock configuration."""
    cell = Cell(
        f"inference-atlas {run}",
        "dgx_spark",
        "nvfp4",
        drafter,
        k,
        chunk_tokens,
        cold,
        True,
        kv_cache_dtype="fp8",
    )
    return cell, replace(cell, sends=warm, cache="warm")


CELLS = (
    Cell(  # noonghunna/club-3090 issue 1047: 1x A6000, vllm/qwen38-27b-single-nvfp4, PREFILL-10K runs
        "noonghunna/club-3090#1047",
        "rtx_a6000",
        "nvfp4",
        "none",
        None,
        2048,  # vLLM's API server's default under 70 GiB of GPU memory (docs/engines.md 1.5)
        ((9997, 5.445), (10367, 5.628), (10367, 5.628)),
        stock=True,
    ),
    Cell(  # my-other-github-account/spark-bench-reproducers, vllm-prefill-optimized-spark: pp2048 2,575 tok/s
        "spark-bench-reproducers vllm-prefill-optimized-spark",
        "dgx_spark",
        "nvfp4",
        "none",
        None,
        8192,
        ((2048, 2048 / 2575),),
        stock=False,
    ),
    # 0xBakeer/inference-atlas, Qwen3.8-27B NVFP4 (unsloth) on one GB10 with vLLM 0.27: each run's cold
    # sends (a warm-up's too, where it was a cold send that compiled nothing) and its sends of a prompt sent
    # before (all of it cached)
    *atlas_run(  # MTP k = 3: vLLM caps the scheduled tokens at 2,048 with 3 speculative tokens
        "828c73f114adfb7e prefill-8k",
        "mtp",
        3,
        2048,
        cold=((10208, 6.527), (10154, 6.530), (10103, 6.512), (10135, 6.535)),
        warm=(
            (10208, 1.537),
            (10208, 1.536),
            (10154, 1.523),
            (10103, 1.490),
            (10135, 1.514),
            (10208, 1.547),
            (10154, 1.516),
        ),
    ),
    *atlas_run(
        "828c73f114adfb7e prefill-32k",
        "mtp",
        3,
        2048,
        cold=((40186, 30.073), (40425, 30.238), (40233, 30.177), (40316, 30.185)),
        warm=(
            (40186, 1.454),
            (40186, 1.449),
            (40425, 1.623),
            (40233, 1.511),
            (40316, 1.529),
            (40186, 1.460),
            (40425, 1.618),
        ),
    ),
    *atlas_run(  # DSpark k = 14: its warm-up (8.7 s) held a first-use compile; one warm send of 3.95 s
        "e8badcd0986cd3d8 prefill-8k",  # (d50's second) found less cached; both left out
        "dspark",
        14,
        16384,
        cold=((10154, 6.712), (10103, 6.694), (10135, 6.688)),
        warm=(
            (10208, 1.901),
            (10208, 1.901),
            (10154, 1.830),
            (10135, 1.818),
            (10208, 1.907),
            (10154, 1.833),
        ),
    ),
    *atlas_run(  # its warm-up (50.3 s) and one warm send of 4.13 s likewise left out
        "e8badcd0986cd3d8 prefill-32k",
        "dspark",
        14,
        16384,
        cold=((40425, 37.470), (40233, 37.293), (40316, 37.263)),
        warm=(
            (40186, 2.060),
            (40186, 1.959),
            (40425, 2.161),
            (40316, 2.298),
            (40186, 1.957),
            (40425, 2.155),
        ),
    ),
)


def simulated_ttft(cell: Cell, extra: tuple[str, ...] = ()) -> float:
    """The simulator's first token for `cell`'s median prompt, alone on an idle server: cold, or sent
    again after a cold send of the same prompt (the last token apart, the `prefix_cache` workload's
    least suffix)."""
    workload = (
        ["workload=prefill_sweep", f"workload.prompt_lengths=[{cell.prompt_tokens}]"]
        if cell.cache == "cold"
        else [
            "workload=prefix_cache",
            f"workload.prompt_lengths=[{cell.prompt_tokens}]",
            "workload.suffix_tokens=1",
        ]
    )
    overrides = [
        f"hardware={cell.hardware}",
        "model=qwen3.8-27b",
        f"quantization={cell.quantization}",
        f"drafter={cell.drafter}",
        *([f"k={cell.k}"] if cell.k is not None else []),
        *workload,
        "workload.repeats=1",
        "workload.warmup=0",
        "runtime.max_model_len=131072",
        f"runtime.max_num_batched_tokens={cell.chunk_tokens}",
        f"runtime.kv_cache_dtype={cell.kv_cache_dtype}",
        *extra,
    ]
    points = simulate(build_spec(overrides))
    (point,) = [v for k, v in points.items() if k[2] == cell.cache]
    return point["ttft_s"]


def rms(errors: list[float]) -> float:
    return math.sqrt(sum(e * e for e in errors) / len(errors))


def _best(
    stock: list[Cell], grid: Iterable[tuple[float, float]]
) -> tuple[float, float, float, list[float]]:
    """The (compute, attention_compute) of `grid` with the least rms error over `stock`, that error and
    each cell's."""
    best: tuple[float, float, float, list[float]] | None = None
    for compute, attention in grid:
        extra = (
            f"hardware.achieved.compute={compute}",
            f"hardware.achieved.attention_compute={attention}",
        )
        errors = [simulated_ttft(c, extra) / c.ttft_s - 1 for c in stock]
        if best is None or rms(errors) < best[2]:
            best = (compute, attention, rms(errors), errors)
    assert best is not None
    return best


def fit_spark() -> list[str]:
    """The Spark's matmul share fitted to its stock cells with its attention share as measured (the
    hardware file's), and both shares fitted together, with their errors."""
    stock = [c for c in CELLS if c.hardware == "dgx_spark" and c.stock]
    measured = build_spec(["hardware=dgx_spark"]).hardware.achieved.attention_compute
    assert measured is not None
    computes = (0.20, 0.22, 0.24, 0.26, 0.28, 0.30)
    lines = ["## The Spark's shares fitted to its stock cells", ""]
    for what, grid in (
        (
            f"`attention_compute` held at the hardware file's {measured}",
            [(c, measured) for c in computes],
        ),
        ("both shares free", list(itertools.product(computes, (0.3, 0.46, 0.6, 0.8, 1.0)))),
    ):
        compute, attention, err, errors = _best(stock, grid)
        lines += [
            f"- {what}: `hardware.achieved.compute={compute}` and `attention_compute={attention}` give rms "
            f"error {err:.1%} over the {len(stock)} stock cells ({', '.join(f'{e:+.0%}' for e in errors)}).",
        ]
    return [*lines, ""]


STUDY_LENGTHS = (1024, 5000, 10000, 20000, 32768)
"""The prompt lengths at which the studies' crossover is read (tests/unit/sim/test_study_conclusions.py)."""


def studies_comparison() -> list[str]:
    """The studies' comparison, Qwen3.8-27B FP8 prefilled alone on each machine, with the Spark's hardware
    file as it stands and with a tuned recipe's matmul share."""
    base = [
        "model=qwen3.8-27b",
        "quantization=fp8",
        "drafter=none",
        "workload=prefill_sweep",
        f"workload.prompt_lengths=[{','.join(map(str, STUDY_LENGTHS))}]",
        "workload.repeats=1",
        "runtime.max_model_len=65536",
    ]

    def ttfts(*overrides: str) -> list[float]:
        points = simulate(build_spec([*base, *overrides]))
        return [v["ttft_s"] for _, v in sorted(points.items(), key=lambda kv: kv[0][1])]

    a6000 = ttfts("hardware=rtx_a6000")
    rows = [
        ("Spark as the hardware file stands", ttfts("hardware=dgx_spark")),
        (
            "Spark, tuned matmuls (`compute=0.50`)",
            ttfts("hardware=dgx_spark", "hardware.achieved.compute=0.50"),
        ),
    ]
    return [
        "## The studies' comparison",
        "",
        "Qwen3.8-27B FP8 without a drafter, one prompt at a time (the `prefill_sweep` workload), simulated:",
        "the A6000's first token, and the Spark's over it.",
        "",
        f"| | {' | '.join(f'{n:,}' for n in STUDY_LENGTHS)} |",
        f"|---|{'---:|' * len(STUDY_LENGTHS)}",
        f"| A6000, first token (s) | {' | '.join(f'{t:.2f}' for t in a6000)} |",
        *(
            f"| {label} ÷ A6000 | {' | '.join(f'{t / a:.2f}' for t, a in zip(times, a6000, strict=True))} |"
            for label, times in rows
        ),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-spark", action="store_true", help="also fit the Spark's two shares")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks/results/third_party_prefill.md"
    )
    args = parser.parse_args()
    lines = [
        "# Third parties' prefills of the studies' model, beside the simulator",
        "",
        "Written by `benchmarks/third_party_prefill.py`. Each row is the median of a source's cold sends of",
        "Qwen3.8-27B (spark-bench-reproducers: Qwen3.5-27B, the same layout) with vLLM, or of its sends of a",
        "prompt already cached (warm); simulated: the same prompt length, quantization, drafter, chunk budget",
        "and KV-cache type with `runtime=sim` and the hardware files as they stand. Target: TTFT within 25 %.",
        "docs/studies.md reads these figures.",
        "",
        "| source | cell | prompt tokens | stock | measured TTFT (s) | simulated (s) | error | within |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    for cell in CELLS:
        sim = simulated_ttft(cell)
        err = sim / cell.ttft_s - 1
        lines.append(
            f"| {cell.source} | {cell.label} | {cell.prompt_tokens:,} | "
            f"{'yes' if cell.stock else 'no (tuned)'} | {cell.ttft_s:.3f} | {sim:.3f} | {err:+.1%} | "
            f"{'yes' if abs(err) <= TTFT_TARGET else '**no**'} |"
        )
    lines.append("")
    lines += studies_comparison()
    if args.fit_spark:
        lines += fit_spark()
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
