"""Fit the simulator's hardware figures to measured step times, and compare them.

The data are forward-pass times of a dense 8B shape on one H200 (benchmarks/data/README.md):
decode and verify steps of b sequences x t new tokens over ctx cached tokens, and prefills
of P tokens, in bf16 and fp8. Every row is simulated with the same `CostModel.pass_seconds`
a sweep uses, so the error printed by benchmarks/calibration.py is the simulator's own.

The fit is a Levenberg-Marquardt least squares on log(simulated / measured) over every row
(numpy only), of: the fixed step overhead, the achieved bandwidth (bf16 weights, KV, states)
and the fp8 weight-streaming bandwidth, the bf16 and fp8 GEMM fractions, the attention
compute fraction, and the KV-read fraction of the multi-token attention path. Fractions are
kept within (0, 1]; where the free optimum of a fraction lies beyond 1 it is held at 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specexp.roofline.costmodel import CostModel, Slice
from specexp.spec.experiment import (
    ModelSpec,
    QuantizationSpec,
)
from specexp.spec.hardware import Achieved, HardwareSpec

DATA = "h200-step-times-dense-8b.jsonl"

DENSE_8B = ModelSpec(
    name="dense-8b",
    num_hidden_layers=36,
    hidden_size=4096,
    intermediate_size=12288,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=151936,
    max_position_embeddings=131072,
)
"""The measured shape (the Qwen3-8B layout; benchmarks/data/README.md)."""
QUANT = {
    "bf16": QuantizationSpec(
        name="bf16",
        bytes_per_weight={"mlp": 2.0, "attention": 2.0, "embeddings": 2.0},
        compute_dtype={"mlp": "bf16", "attention": "bf16", "embeddings": "bf16"},
    ),
    "fp8": QuantizationSpec(  # per-tensor fp8 linears; lm_head bf16 (README: "also in the fp8 rows")
        name="fp8",
        bytes_per_weight={"mlp": 1.0, "attention": 1.0, "embeddings": 2.0},
        compute_dtype={"mlp": "fp8", "attention": "fp8", "embeddings": "bf16"},
    ),
}
PARAMS = (
    "step_overhead_ms",
    "layer_overhead_us",
    "bandwidth",
    "bandwidth_fp8",
    "compute",
    "compute_fp8",
    "attention_compute",
    "multi_query_attention",
    "multi_query_blocks",
)
"""The fitted figures, in the order of the parameter vector."""


@dataclass(frozen=True)
class Row:
    kind: str
    wdtype: str
    ms: float
    b: int = 1
    t: int = 1
    ctx: int = 0
    P: int = 0
    model: ModelSpec = DENSE_8B

    @property
    def label(self) -> str:
        if self.kind == "prefill":
            return f"prefill P={self.P}"
        return f"step b={self.b} t={self.t} ctx={self.ctx}"

    def slices(self) -> list[Slice]:
        if self.kind == "prefill":
            return [Slice(tokens=self.P, context=0, logits=1)]
        return [Slice(tokens=self.t, context=self.ctx, logits=self.t)] * self.b


SHAPE_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
)


def load_rows(path: Path) -> list[Row]:
    """Step and prefill rows; a `model` row that carries the SHAPE_KEYS names another shape."""
    rows, shapes = [], {"dense-8b": DENSE_8B}
    for line in path.read_text().splitlines():
        entry: dict[str, Any] = json.loads(line)
        if entry["kind"] == "model" and all(key in entry for key in SHAPE_KEYS):
            shapes[entry["model"]] = ModelSpec(
                name=entry["model"],
                max_position_embeddings=262144,
                **{key: entry[key] for key in SHAPE_KEYS},
            )
        m = shapes[entry.get("model", "dense-8b")]
        if entry["kind"] == "step":
            rows.append(
                Row(
                    "step",
                    entry["wdtype"],
                    entry["ms"],
                    b=entry["b"],
                    t=entry["t"],
                    ctx=entry["ctx"],
                    model=m,
                )
            )
        elif entry["kind"] == "prefill":
            rows.append(Row("prefill", entry["wdtype"], entry["ms"], P=entry["P"], model=m))
    return rows


def predict_ms(hw: HardwareSpec, row: Row) -> float:
    """Simulated time of one row, ms."""
    return (
        CostModel.build(hw, row.model, QUANT[row.wdtype], "auto").pass_seconds(row.slices()) * 1e3
    )


def with_params(hw: HardwareSpec, p: Sequence[float]) -> HardwareSpec:
    """`hw` with the figures of PARAMS set to `p` (unvalidated: trial points may leave (0, 1])."""
    v = dict(zip(PARAMS, p, strict=True))
    achieved = Achieved.model_construct(
        bandwidth=v["bandwidth"],
        compute=v["compute"],
        bandwidth_by_dtype={"fp8": v["bandwidth_fp8"]},
        compute_by_dtype={"fp8": v["compute_fp8"]},
        attention_compute=v["attention_compute"],
        multi_query_attention=v["multi_query_attention"],
        multi_query_blocks=v["multi_query_blocks"],
        dequant_compute=hw.achieved.dequant_compute,
    )
    return hw.model_copy(
        update={
            "achieved": achieved,
            "step_overhead_ms": v["step_overhead_ms"],
            "layer_overhead_us": v["layer_overhead_us"],
        }
    )


def current_params(hw: HardwareSpec) -> list[float]:
    a = hw.achieved
    return [
        hw.step_overhead_ms,
        hw.layer_overhead_us,
        a.bandwidth,
        a.bandwidth_by_dtype.get("fp8", a.bandwidth),
        a.compute,
        a.compute_by_dtype.get("fp8", a.compute),
        a.attention_compute or a.compute,
        a.multi_query_attention or 1.0,
        a.multi_query_blocks or 32.0,
    ]


def _lm(
    residual: Callable[[np.ndarray], np.ndarray],
    p0: np.ndarray,
    upper: np.ndarray,
    iterations: int = 200,
) -> np.ndarray:
    """Levenberg-Marquardt on a residual vector, each parameter kept in (0, upper]."""
    p, lam = p0.astype(float), 1e-3
    r = residual(p)
    for _ in range(iterations):
        jac = np.empty((r.size, p.size))
        for j in range(p.size):
            step = 1e-6 * max(abs(p[j]), 1e-3)
            q = p.copy()
            q[j] += step
            jac[:, j] = (residual(q) - r) / step
        a, g = jac.T @ jac, jac.T @ r
        trial = np.clip(p + np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g), 1e-4, upper)
        if not np.all(np.isfinite(trial)):  # a singular step: damp harder
            lam *= 10
            continue
        rt = residual(trial)
        if rt @ rt < r @ r:
            p, r, lam = trial, rt, lam / 3
        else:
            lam *= 10
        if lam > 1e12:
            break
    return p


def kv_bandwidth(hw: HardwareSpec, rows: Sequence[Row]) -> float:
    """Achieved bandwidth fraction from the single-sequence decode rows across context lengths:
    ms = intercept (per shape and weight dtype) + KV bytes / bandwidth, a linear least squares.
    The slope is a pure streaming read, free of the fixed overhead and of the weights' kernels."""
    picked = [r for r in rows if r.kind == "step" and r.b == 1 and r.t == 1]
    groups = sorted({(r.model.name, r.wdtype) for r in picked})

    def kv(r: Row) -> float:
        return CostModel.build(hw, r.model, QUANT["bf16"], "auto").kv_bytes_per_token

    a = np.array(
        [
            [(r.ctx + 1) * kv(r)] + [float((r.model.name, r.wdtype) == g) for g in groups]
            for r in picked
        ]
    )
    y = np.array([r.ms / 1e3 for r in picked])
    slope = np.linalg.lstsq(a, y, rcond=None)[0][0]
    return float(1.0 / slope / (hw.memory_bandwidth_gbps * 1e9))


def fit(
    hw: HardwareSpec, rows: Sequence[Row], hold: dict[str, float] | None = None
) -> dict[str, float]:
    """Least-squares figures for `hw` from `rows` (relative error), with the fit's rms and max.

    Two stages: the bandwidth from the KV slope of the decode rows (`kv_bandwidth`), then every
    other figure by Levenberg-Marquardt over all rows with that bandwidth held. (Fitting the
    bandwidth jointly trades it against the overhead and lands on the datasheet's 4.8 TB/s,
    which the measured ~4.3 TB/s copy ceiling and the KV slope both contradict.) `hold` keeps
    other figures fixed: rows of one shape cannot tell per-step from per-layer overhead apart.
    """
    held = {"bandwidth": kv_bandwidth(hw, rows), **(hold or {})}
    free = [i for i, name in enumerate(PARAMS) if name not in held]

    def full(q: np.ndarray) -> np.ndarray:
        p = np.empty(len(PARAMS))
        for name, value in held.items():
            p[PARAMS.index(name)] = value
        p[free] = q
        return p

    def residual(q: np.ndarray) -> np.ndarray:
        trial = with_params(hw, [float(v) for v in full(q)])
        return np.array([np.log(predict_ms(trial, row) / row.ms) for row in rows])

    upper = np.array([np.inf, np.inf] + [1.0] * (len(PARAMS) - 3) + [np.inf])[free]
    start = np.maximum(np.array(current_params(hw)), 1e-2)[free]
    q = _lm(residual, start, upper)
    err = np.expm1(residual(q))
    out = dict(zip(PARAMS, (float(x) for x in full(q)), strict=True))
    out.update(rms_error=float(np.sqrt(np.mean(err**2))), max_error=float(np.max(np.abs(err))))
    return out
