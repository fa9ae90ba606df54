"""The simulator against measured H200 step times: every row simulated vs measured, with the error.

    .venv/bin/python benchmarks/calibration.py [--data PATH] [--fit] [--check MEASURED.jsonl ...]
    python3 benchmarks/calibration.py --measure OUT.jsonl     # on an H200 with PyTorch: other shapes

Each row of benchmarks/data/h200-step-times-dense-8b.jsonl (a dense 8B shape, bf16 and fp8) is
simulated with conf/hardware/h200.yaml through the same CostModel.pass_seconds a sweep uses.
`--fit` re-runs the least-squares fit (specexp/fit/hardware.py) and prints the
figures to keep in conf/hardware/h200.yaml. `--check` compares further measured rows (other
shapes, measured by `--measure` the way the data's README describes) with the same figures, not
refitted. The memory section compares the KV capacity the simulated DGX Spark reports with the
capacities docs/studies.md gives.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from specexp.spec.hardware import HardwareSpec

GROUPS = {
    "decode (t = 1)": lambda r: r.kind == "step" and r.t == 1,
    "verify (t > 1), ctx 1k": lambda r: r.kind == "step" and r.t > 1 and r.ctx == 1024,
    "verify (t > 1), long ctx": lambda r: r.kind == "step" and r.t > 1 and r.ctx > 1024,
    "prefill": lambda r: r.kind == "prefill",
}


def summary(errors: Sequence[float]) -> str:
    import numpy as np

    e = np.array(errors)
    return (
        f"{len(e)} | {100 * np.sqrt(np.mean(e**2)):.1f} % | {100 * np.mean(e):+.1f} % | "
        f"{100 * np.max(np.abs(e)):.1f} %"
    )


SHAPES = {  # the data's shape, and two others in the same family (Qwen3-1.7B and Qwen3-14B layouts)
    "dense-8b": dict(
        num_hidden_layers=36, hidden_size=4096, intermediate_size=12288, num_attention_heads=32
    ),
    "dense-14b": dict(
        num_hidden_layers=40, hidden_size=5120, intermediate_size=17408, num_attention_heads=40
    ),
    "dense-1.7b": dict(
        num_hidden_layers=28, hidden_size=2048, intermediate_size=6144, num_attention_heads=16
    ),
}
STEPS = [(1024, b, t) for b in (1, 8, 64) for t in (1, 4, 16)] + [(32768, 1, 1), (32768, 1, 8)]


MASKS = ("gqa_bool", "repeat_bool", "gqa_float")
"""How a verify pass (t > 1 over a cache) masks attention: SDPA with enable_gqa and a boolean mask,
K/V repeated per query head and a boolean mask, or enable_gqa and an additive float mask."""


def measure(path: str, mask_kind: str = "gqa_bool") -> None:
    """Forward-pass times of dense shapes with random weights, as the data's README describes them:
    cuBLAS GEMMs (fp8: per-tensor torch._scaled_mm, activations cast to fp8 per call with a fixed
    scale; lm_head bf16), SDPA attention, CUDA graphs for steps (median of 20 replays), causal
    prefills (median of 5)."""
    import json

    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev, bf16, f8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
    out = open(path, "w")

    def emit(row: dict[str, Any]) -> None:
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(row, flush=True)

    def timed(fn: Any, n: int) -> list[float]:
        times = []
        for _ in range(n):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)

    for name, dims in SHAPES.items():
        shape = dict(dims, num_key_value_heads=8, head_dim=128, vocab_size=151936)
        h, inter, layers = (
            shape["hidden_size"],
            shape["intermediate_size"],
            shape["num_hidden_layers"],
        )
        heads, kvh, d = shape["num_attention_heads"], 8, 128
        for wdtype in ("bf16", "fp8") if name != "dense-1.7b" else ("bf16",):

            def linear(n_out: int, n_in: int) -> tuple[Any, Any]:
                w = torch.randn(n_out, n_in, device=dev, dtype=bf16) * 0.02
                if wdtype == "bf16":
                    return (w, None)
                scale = (w.abs().amax().float() / 448).reshape(())
                return ((w / scale).to(f8), scale)

            one = torch.ones((), device=dev, dtype=torch.float32)

            def mm(x: Any, w: tuple[Any, Any]) -> Any:
                if w[1] is None:
                    return x @ w[0].t()
                return torch._scaled_mm(
                    x.to(f8), w[0].t(), scale_a=one, scale_b=w[1], out_dtype=bf16
                )

            blocks = [
                [
                    linear(heads * d, h),
                    linear(kvh * d, h),
                    linear(kvh * d, h),
                    linear(h, heads * d),
                    linear(inter, h),
                    linear(inter, h),
                    linear(h, inter),
                ]
                for _ in range(layers)
            ]
            lm_head = torch.randn(shape["vocab_size"], h, device=dev, dtype=bf16) * 0.02
            weights = (
                sum(w[0].numel() * w[0].element_size() for blk in blocks for w in blk)
                + lm_head.numel() * 2
            )
            emit(
                {
                    "kind": "model",
                    "model": name,
                    "wdtype": wdtype,
                    **shape,
                    "weight_gb": weights / 1e9,
                }
            )

            def forward(x: Any, b: int, t: int, ctx: int, caches: list[Any] | None) -> Any:
                for i, (wq, wk, wv, wo, wg, wu, wd) in enumerate(blocks):  # noqa: F821 - assigned below, before the first call
                    y = F.rms_norm(x, (h,))
                    q = mm(y, wq).view(b, t, heads, d).transpose(1, 2)
                    k = mm(y, wk).view(b, t, kvh, d).transpose(1, 2)
                    v = mm(y, wv).view(b, t, kvh, d).transpose(1, 2)
                    if caches is None:  # prefill: no cache, causal
                        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                    else:
                        kc, vc = caches[i]
                        kc[:, :, ctx : ctx + t] = k
                        vc[:, :, ctx : ctx + t] = v
                        if t == 1:
                            a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
                        elif mask_kind == "repeat_bool":
                            a = F.scaled_dot_product_attention(
                                q,
                                kc.repeat_interleave(heads // kvh, 1),
                                vc.repeat_interleave(heads // kvh, 1),
                                attn_mask=masks[(t, ctx)],
                            )
                        else:
                            a = F.scaled_dot_product_attention(
                                q, kc, vc, attn_mask=masks[(t, ctx)], enable_gqa=True
                            )
                    x = x + mm(a.transpose(1, 2).reshape(b * t, heads * d), wo)
                    y = F.rms_norm(x, (h,))
                    x = x + mm(F.silu(mm(y, wg)) * mm(y, wu), wd)
                x = F.rms_norm(x, (h,))
                return (x if caches is not None else x[-1:]) @ lm_head.t()  # noqa: F821

            masks: dict[tuple[int, int], Any] = {}

            def step(ctx: int, b: int, t: int) -> None:
                allowed = torch.ones(t, ctx + t, device=dev, dtype=torch.bool).tril(
                    ctx
                )  # cache + causal
                masks[(t, ctx)] = (
                    allowed
                    if mask_kind.endswith("bool")
                    else torch.zeros(t, ctx + t, device=dev, dtype=bf16).masked_fill(
                        ~allowed, float("-inf")
                    )
                )
                caches = [
                    (
                        torch.randn(b, kvh, ctx + t, d, device=dev, dtype=bf16),
                        torch.randn(b, kvh, ctx + t, d, device=dev, dtype=bf16),
                    )
                    for _ in range(layers)
                ]
                x = torch.randn(b * t, h, device=dev, dtype=bf16)
                for _ in range(3):
                    forward(x, b, t, ctx, caches)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    forward(x, b, t, ctx, caches)
                timed(graph.replay, 3)
                ms = timed(graph.replay, 20)
                emit(
                    {
                        "kind": "step",
                        "model": name,
                        "wdtype": wdtype,
                        "ctx": ctx,
                        "b": b,
                        "t": t,
                        "ms": ms[10],
                        "ms_min": ms[0],
                        "ms_max": ms[-1],
                        "mask": mask_kind,
                    }
                )

            def prefill(p: int) -> None:
                x = torch.randn(p, h, device=dev, dtype=bf16)
                timed(lambda: forward(x, 1, p, 0, None), 2)
                ms = timed(lambda: forward(x, 1, p, 0, None), 5)
                emit(
                    {
                        "kind": "prefill",
                        "model": name,
                        "wdtype": wdtype,
                        "P": p,
                        "ms": ms[2],
                        "ms_min": ms[0],
                        "ms_max": ms[-1],
                    }
                )

            for job, args in [(step, s) for s in STEPS] + [(prefill, (p,)) for p in (1024, 8192)]:
                try:
                    job(*args)
                except Exception as error:  # record and go on: one shape's failure is not the run's
                    print(f"FAILED {name} {wdtype} {args}: {error!r}", flush=True)
                torch.cuda.empty_cache()
            del blocks, lm_head
            torch.cuda.empty_cache()
    out.close()


def check(paths: Sequence[str], hw: HardwareSpec) -> None:
    """Rows of other shapes: fitted on the file's dense-8b rows alone, simulated for every shape
    with those figures (the transfer), and with the kept figures (the harness gap)."""
    from specexp.fit import hardware as calibrate

    rows = [row for p in paths for row in calibrate.load_rows(Path(p))]
    own = calibrate.fit(
        hw, [r for r in rows if r.model.name == "dense-8b"], hold={"step_overhead_ms": 0.0}
    )
    transfer = calibrate.with_params(hw, [own[name] for name in calibrate.PARAMS])
    print("## Other shapes: do the figures carry without refitting?\n")
    print(
        f"Rows measured on an H200 by `benchmarks/calibration.py --measure` ({', '.join(paths)}): the data's "
        "method re-implemented (its verify-pass masking unknown), for the dense-8b shape again and for the "
        "Qwen3-14B and Qwen3-1.7B layouts. **Transfer**: figures fitted on this harness's dense-8b rows only, "
        "simulating every shape. **Kept**: conf/hardware/h200.yaml's figures (fitted on the data's harness).\n"
    )
    joint = calibrate.fit(hw, rows)
    print(
        "| figure | fitted on this harness's dense-8b rows | fitted on all its shapes, per-step overhead free |"
    )
    print("|---|---:|---:|")
    for name in calibrate.PARAMS:
        print(f"| `{name}` | {own[name]:.4f} | {joint[name]:.4f} |")
    print(
        f"| fit error (rms, max) | {100 * own['rms_error']:.1f} %, {100 * own['max_error']:.1f} % | "
        f"{100 * joint['rms_error']:.1f} %, {100 * joint['max_error']:.1f} % |"
    )
    print("\n| shape | dtype | row | measured (ms) | transfer (ms) | error | kept (ms) | error |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    errors: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for row in rows:
        a, b = calibrate.predict_ms(transfer, row), calibrate.predict_ms(hw, row)
        e = errors.setdefault((row.model.name, row.wdtype), ([], []))
        e[0].append(a / row.ms - 1)
        e[1].append(b / row.ms - 1)
        print(
            f"| {row.model.name} | {row.wdtype} | {row.label} | {row.ms:.3f} | {a:.3f} | "
            f"{100 * (a / row.ms - 1):+.1f} % | {b:.3f} | {100 * (b / row.ms - 1):+.1f} % |"
        )
    print("\n| shape | figures | n | rms | mean (bias) | max abs |\n|---|---|---:|---:|---:|---:|")
    for (name, dtype), (by_transfer, by_kept) in errors.items():
        print(f"| {name} {dtype} | transfer | {summary(by_transfer)} |")
        print(f"| {name} {dtype} | kept | {summary(by_kept)} |")
    print()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        help="path of the step times (default: benchmarks/data/h200-step-times-dense-8b.jsonl)",
    )
    parser.add_argument("--fit", action="store_true", help="re-fit the figures and print them")
    parser.add_argument("--check", nargs="*", default=[], help="further measured rows to compare")
    parser.add_argument(
        "--measure", help="measure other shapes on this machine's GPU into this jsonl"
    )
    parser.add_argument(
        "--mask", choices=MASKS, default="gqa_bool", help="verify-pass masking (--measure)"
    )
    args = parser.parse_args(argv)
    if args.measure:  # on the GPU machine: PyTorch only, no specexp dependencies
        measure(args.measure, args.mask)
        return
    from specexp.fit import hardware as calibrate
    from specexp.fit import spark
    from specexp.run.compose import load_option
    from specexp.sim.memory_plan import ENGINE_RESERVED_GIB
    from specexp.spec.hardware import HardwareSpec

    path = Path(args.data) if args.data else ROOT / "benchmarks/data" / calibrate.DATA
    rows = calibrate.load_rows(path)
    hw = load_option(HardwareSpec, "hardware", "h200", "hardware")
    print("# Simulator calibration: H200 step times\n")
    command = " ".join(["benchmarks/calibration.py", *(argv if argv is not None else sys.argv[1:])])
    print(
        f"Recorded {datetime.date.today().isoformat()} with `.venv/bin/python {command}`; data `{path.name}` "
        f"({len(rows)} rows), hardware `conf/hardware/h200.yaml`.\n"
    )
    print("Figures used (fractions of the datasheet's 4.8 TB/s, 989 bf16 / 1979 fp8 TFLOP/s):\n")
    print("| figure | value |\n|---|---:|")
    for name, value in zip(calibrate.PARAMS, calibrate.current_params(hw), strict=True):
        print(f"| `{name}` | {value:.3f} |")
    print()
    if args.fit:
        fitted = calibrate.fit(hw, rows, hold={"step_overhead_ms": 0.0})
        print(
            "## Fit\n\nLeast squares on log(simulated / measured) over every row "
            "(specexp/fit/hardware.py), the per-step overhead held at 0: one shape cannot tell "
            "it from the per-layer one, and a fit over three shapes (below) puts it at 0.\n"
        )
        print("| figure | fitted | in h200.yaml |\n|---|---:|---:|")
        for name, value in zip(calibrate.PARAMS, calibrate.current_params(hw), strict=True):
            print(f"| `{name}` | {fitted[name]:.4f} | {value:.3f} |")
        print(
            f"\nFit error: rms {100 * fitted['rms_error']:.1f} %, max {100 * fitted['max_error']:.1f} %.\n"
        )
    print("## Every row\n")
    print("| dtype | row | measured (ms) | simulated (ms) | error |\n|---|---|---:|---:|---:|")
    errors = []
    for row in rows:
        sim = calibrate.predict_ms(hw, row)
        errors.append(sim / row.ms - 1)
        print(
            f"| {row.wdtype} | {row.label} | {row.ms:.3f} | {sim:.3f} | {100 * errors[-1]:+.1f} % |"
        )
    print("\n## Error by kind of pass\n")
    print("| rows | n | rms | mean (bias) | max abs |\n|---|---:|---:|---:|---:|")
    for dtype in ("bf16", "fp8"):
        for name, pick in GROUPS.items():
            picked = [e for r, e in zip(rows, errors, strict=True) if r.wdtype == dtype and pick(r)]
            print(f"| {dtype} {name} | {summary(picked)} |")
    print(f"| **all** | {summary(errors)} |\n")
    if args.check:
        check(args.check, hw)
    print("## KV capacity (memory model)\n")
    print(
        "Qwen3.8-27B FP8 + MTP k = 3 on the simulated DGX Spark vs the capacities docs/studies.md reports "
        f"(engine reserve {ENGINE_RESERVED_GIB:g} GiB, fitted to them by `specexp.fit.spark.fit_reserved`):\n"
    )
    print(
        "| gpu_memory_utilization | prefix caching | reported (tokens) | simulated (tokens) | error |"
    )
    print("|---:|---|---:|---:|---:|")
    for util, pc, tokens in spark.SPARK_CAPACITY:
        sim_tokens = spark.kv_tokens(spark.spark_spec(util, pc), ENGINE_RESERVED_GIB)
        print(
            f"| {util:g} | {'on' if pc else 'off'} | {tokens:,} | {sim_tokens:,} | "
            f"{100 * (sim_tokens / tokens - 1):+.1f} % |"
        )
    reserved, rms = spark.fit_reserved()
    print(
        f"\nLeast-squares reserve over the three: {reserved:.2f} GiB (rms error {100 * rms:.1f} %)."
    )


if __name__ == "__main__":
    main()
