"""Physical limits: the fastest a figure could be on its hardware, from the simulator's roofline.

The limit is the simulator's cost model (specexp.roofline.costmodel) at the datasheet:
full memory bandwidth and peak FLOP/s (achieved fractions 1), no step overhead, no drafting
cost. One decode step reads at least the weights at their quantization and the KV of the
prompt, and emits at most the tokens per pass (1 without a drafter; the measured acceptance
length where a run recorded it; else k + 1). A warm prefix cache can spare all of a prompt
but one token, so time-to-first-token floors assume so unless the cache is cold. Unknowns
take the value that gives the highest limit, or give no limit (with the reason). A figure
beyond its limit is implausible.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from types import MappingProxyType
from typing import Any, Protocol

from pydantic import BaseModel

from specexp.check.figures import Figure
from specexp.check.findings import Finding, finding
from specexp.roofline.costmodel import CostModel, Slice
from specexp.spec.errors import SpecError
from specexp.spec.experiment import ModelSpec, QuantizationSpec
from specexp.spec.hardware import Achieved, HardwareSpec
from specexp.spec.vocabulary import C, M


class Readable(Protocol):
    """A run's other metrics, read by name: a mapping, or a record's Metrics."""

    def get(self, name: str, /) -> Any: ...


KV_DTYPES = ("auto", "bf16", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")
"""KV element types the cost model knows; any other is taken as fp8 (1 byte: the highest limit)."""


@dataclass(frozen=True)
class Limit:
    metric: str
    bound: str
    """"max" (no figure can be higher) or "min" (no figure can be lower)."""
    value: float
    basis: str

    def broken_by(self, value: Any) -> bool:
        if type(value) is float or type(value) is int:  # the common case, without a list
            return (
                value > self.value * (1 + 1e-9)
                if self.bound == "max"
                else value < self.value * (1 - 1e-9)
            )
        values = value if isinstance(value, tuple) else (value,)
        nums = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if self.bound == "max":
            return any(v > self.value * (1 + 1e-9) for v in nums)
        return any(v < self.value * (1 - 1e-9) for v in nums)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "bound": self.bound,
            "value": self.value,
            "basis": self.basis,
        }


@dataclass(frozen=True, eq=False)  # one per setup (`_device_of`): known by its identity
class _Device:
    cost: CostModel
    basis: str


@lru_cache(maxsize=64)
def _option(group: str, name: str) -> Any:
    from specexp.spec.options import load_option

    specs: dict[str, type[BaseModel]] = {
        "hardware": HardwareSpec,
        "model": ModelSpec,
        "quantization": QuantizationSpec,
    }
    return load_option(specs[group], group, name, group)


def _device(c: Mapping[str, Any]) -> _Device | str:
    names = [c.get(group) for group in ("hardware", "model", "quantization")]
    count, kv = c.get(C.gpu_count), c.get(C.kv_cache_dtype)
    try:
        return _device_of(
            *names, count if isinstance(count, int) else None, kv if isinstance(kv, str) else None
        )
    except TypeError:  # a condition that is not hashable: not a name
        return "hardware, model or quantization unknown"


@lru_cache(maxsize=64)
def _device_of(
    hardware: Any, model: Any, quantization: Any, count: int | None, kv_dtype: str | None
) -> _Device | str:
    """The datasheet device of those conditions (one cost model for every figure under them)."""
    c = {
        "hardware": hardware,
        "model": model,
        "quantization": quantization,
        "gpu_count": count,
        "kv_cache_dtype": kv_dtype,
    }
    names = {}
    for group in ("hardware", "model", "quantization"):
        if not isinstance(c.get(group), str):
            return f"{group} unknown"
        try:
            names[group] = _option(group, c[group])
        except SpecError:
            return f"no conf/{group}/{c[group]}.yaml"
    hw: HardwareSpec = names[C.hardware]
    if not hw.datasheet:
        return f"{hw.name} is a generic profile: its bandwidth and FLOP/s are assumed, not a datasheet's"
    gpus: int = max(
        1, count if isinstance(count, int) else hw.gpu_count
    )  # a CPU (0 GPUs) still has its bandwidth
    datasheet = hw.model_copy(
        update={
            "achieved": Achieved(bandwidth=1.0, compute=1.0),
            "step_overhead_ms": 0.0,
            "layer_overhead_us": 0.0,
            "memory_bandwidth_gbps": hw.memory_bandwidth_gbps * gpus,
            "peak_tflops": {k: (v * gpus if v else v) for k, v in hw.peak_tflops.items()},
        }
    )
    kv = c.get(C.kv_cache_dtype) if c.get(C.kv_cache_dtype) in KV_DTYPES else "fp8"
    cost = CostModel.build(datasheet, names[C.model], names[C.quantization], str(kv))
    basis = (
        f"{hw.name} datasheet {hw.memory_bandwidth_gbps:g} GB/s x {gpus} GPU; "
        f"{cost.weight_bytes_read(1) / 1e9:.1f} GB of {c[C.quantization]} weights read per pass"
        + (" of one token" if cost.shape.experts else "")
    )
    return _Device(cost, basis)


def _tokens_per_pass(c: Mapping[str, Any], measured: Readable) -> tuple[float, str] | str:
    drafter = c.get(C.drafter)
    if drafter is None:
        return "drafter unknown"
    if drafter == "none":
        return 1.0, "1 token per pass (no drafter)"
    k = c.get(C.k)
    tpp = measured.get(M.tokens_per_pass)
    if (
        isinstance(tpp, (int, float))
        and not isinstance(tpp, bool)
        and math.isfinite(tpp)
        and tpp >= 1
    ):
        tpp = min(float(tpp), k + 1.0) if isinstance(k, int) else float(tpp)
        return tpp, f"{tpp:.2f} tokens per pass (the run's acceptance length)"
    if not isinstance(k, int):
        return "k unknown"
    return k + 1.0, f"at most {k + 1} tokens per pass (k = {k})"


def _context(c: Mapping[str, Any]) -> tuple[int, str]:
    p = c.get(C.prompt_tokens)
    return (
        (p, f"KV of {p:,} prompt tokens")
        if isinstance(p, int)
        else (0, "prompt length unknown: no KV counted")
    )


def _stream(fig: Figure, measured: Readable, streams: int) -> tuple[float, str] | str:
    """Seconds of one decode pass over `streams` sequences, per token of one stream."""
    device = _device(fig.conditions)
    if isinstance(device, str):
        return device
    tpp = _tokens_per_pass(fig.conditions, measured)
    if isinstance(tpp, str):
        return tpp
    ctx, ctx_note = _context(fig.conditions)
    seconds = _decode_pass_seconds(device, ctx, streams)
    return seconds / tpp[0], f"{device.basis}; {ctx_note}; {tpp[1]}; {streams} stream(s) per pass"


@lru_cache(maxsize=4096)
def _decode_pass_seconds(device: _Device, context: int, streams: int) -> float:
    """One decode pass of `streams` sequences of `context` tokens on `device` (the same for every
    figure of a sweep's setup: computed once)."""
    return device.cost.pass_seconds([Slice(tokens=1, context=context, logits=1)] * streams)


def _concurrency(fig: Figure) -> int:
    c = fig.conditions.get(C.concurrency)
    return c if isinstance(c, int) else 1


def _per_stream(fig: Figure, measured: Readable) -> Limit | str:
    s = _stream(fig, measured, _concurrency(fig))
    return s if isinstance(s, str) else Limit(fig.metric, "max", 1 / s[0], s[1])


def _aggregate(fig: Figure, measured: Readable) -> Limit | str:
    if not isinstance(fig.conditions.get(C.concurrency), int):
        return "concurrency unknown"
    n = _concurrency(fig)
    s = _stream(fig, measured, n)
    return s if isinstance(s, str) else Limit(fig.metric, "max", n / s[0], s[1])


def _tpot(fig: Figure, measured: Readable) -> Limit | str:
    s = _stream(fig, measured, _concurrency(fig))
    return s if isinstance(s, str) else Limit(fig.metric, "min", s[0], s[1])


def _computed_tokens(c: Mapping[str, Any], measured: Readable) -> tuple[int, str]:
    """Prompt tokens that must be computed before the first token (at least 1)."""
    prompt = c.get(C.prompt_tokens)
    if not isinstance(prompt, int):
        return 1, "prompt length unknown: 1 token computed"
    cached = measured.get(M.cached_prompt_tokens)
    if isinstance(cached, (int, float)) and not isinstance(cached, bool) and 0 <= cached < prompt:
        n = int(prompt - cached)
        return n, f"{n:,} uncached prompt tokens computed"
    if c.get(C.cache) == "cold" or c.get(C.prefix_caching) is False:
        return prompt, f"{prompt:,} prompt tokens computed (nothing cached)"
    return 1, "a warm prefix cache may serve all but 1 prompt token"


def _ttft(fig: Figure, measured: Readable) -> Limit | str:
    device = _device(fig.conditions)
    if isinstance(device, str):
        return device
    n, note = _computed_tokens(fig.conditions, measured)
    prompt = fig.conditions.get(C.prompt_tokens)
    ctx = prompt - n if isinstance(prompt, int) else 0
    seconds = device.cost.pass_seconds([Slice(tokens=n, context=ctx, logits=1)])
    return Limit(fig.metric, "min", seconds, f"{device.basis}; {note}; one pass")


def _prefill(fig: Figure, measured: Readable) -> Limit | str:
    """Uncached prompt tokens / the least time to compute them (attention FLOPs left out)."""
    device = _device(fig.conditions)
    if isinstance(device, str):
        return device
    prompt = fig.conditions.get(C.prompt_tokens)
    if not isinstance(prompt, int):
        return "prompt_tokens unknown"
    cm, s = device.cost, device.cost.shape
    dtypes = cm.quant.compute_dtype
    compute = 2 * s.active_mlp_params * prompt / cm.flops_rate(
        dtypes["mlp"]
    ) + 2 * s.attention_params * prompt / cm.flops_rate(dtypes["attention"])
    moved = (cm.weight_bytes_read(prompt) + prompt * cm.kv_bytes_per_token) / cm.bandwidth
    return Limit(
        fig.metric,
        "max",
        prompt / max(compute, moved),
        f"{device.basis}; {prompt:,} prompt tokens at peak FLOP/s, attention left out",
    )


def _ratio_limit(fig: Figure, measured: Readable) -> Limit | str:
    return Limit(fig.metric, "max", 1.0, "a share of drafted tokens is at most 1")


def _tokens_per_pass_limit(fig: Figure, measured: Readable) -> Limit | str:
    tpp = _tokens_per_pass(fig.conditions, {})
    return tpp if isinstance(tpp, str) else Limit(fig.metric, "max", tpp[0], tpp[1])


LIMITS: Mapping[str, Callable[[Figure, Readable], Limit | str]] = MappingProxyType(
    {
        "decode_tps": _per_stream,
        "e2e_tps": _per_stream,
        "per_stream_tps": _per_stream,
        "aggregate_tps": _aggregate,
        "tpot_s": _tpot,
        "ttft_s": _ttft,
        "prefill_tps": _prefill,
        "acceptance_rate": _ratio_limit,
        "acceptance_by_position": _ratio_limit,
        "tokens_per_pass": _tokens_per_pass_limit,
    }
)
"""Metric -> its physical limit, or the reason there is none."""


def limit(fig: Figure, measured: Readable | None = None) -> Limit | str:
    """The physical limit of `fig`'s metric under its conditions, or why there is none.

    `measured` are the other metrics of the same run (its tokens_per_pass and
    cached_prompt_tokens tighten the limit).
    """
    fn = LIMITS.get(fig.metric)
    if fn is None:
        return f"no physical limit for {fig.metric}"
    try:
        return fn(fig, measured if measured is not None else {})
    except (ArithmeticError, ValueError, KeyError) as err:
        return f"no limit: {err}"


FLOORS: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "acceptance_rate": (0.0, "a share of drafted tokens is at least 0"),
        "acceptance_by_position": (0.0, "a share of drafted tokens is at least 0"),
        "tokens_per_pass": (1.0, "a verifying pass emits at least the token it computes"),
    }
)
"""Metric -> the least value its definition allows, where that is more than 0 or needs saying;
every other metric (a rate, a time, a count, a share) is at least 0."""
CEILINGS: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "task_score": (1.0, "a share of items is at most 1"),
        "slo_attainment": (1.0, "a share of requests is at most 1"),
    }
)
"""Metric -> the most its definition allows, for shares outside LIMITS."""


def defined_range(fig: Figure) -> Limit | None:
    """The bound of `fig`'s definition it breaks (no hardware needed), or None."""
    floor, ceiling = _defined_bounds(fig.metric)
    if floor.broken_by(fig.value):
        return floor
    return ceiling if ceiling is not None and ceiling.broken_by(fig.value) else None


@cache
def _defined_bounds(metric: str) -> tuple[Limit, Limit | None]:
    """The least and the most `metric`'s definition allows (FLOORS, CEILINGS)."""
    low, why = FLOORS.get(metric, (0.0, "a rate, a time or a count is never negative"))
    ceiling = CEILINGS.get(metric)
    return Limit(metric, "min", low, why), (
        None if ceiling is None else Limit(metric, "max", *ceiling)
    )


def without_datasheet(hardware: Iterable[Any]) -> tuple[str, ...]:
    """The hardware of `hardware` (names) whose files give assumed figures, not a datasheet's: no
    figure on them has a physical limit."""
    out = set()
    for name in {h for h in hardware if isinstance(h, str)}:
        try:
            if not _option("hardware", name).datasheet:
                out.add(name)
        except SpecError:
            continue
    return tuple(sorted(out))


def needs_no_check(metric: str, value: Any) -> bool:
    """Whether a run's `value` of `metric` is plausible on sight: a number at or above its
    definition's floor, of a metric with no ceiling and no physical limit (most metrics: a
    report of 10,000 runs judges 300,000 figures)."""
    if metric in LIMITS or metric in CEILINGS or type(value) not in (int, float):
        return False
    return not _defined_bounds(metric)[0].broken_by(value)


def implausible(fig: Figure, measured: Readable | None = None) -> Finding | None:
    """An `implausible` finding when `fig` is outside what its definition allows (a negative
    rate, acceptance outside 0-1, fewer than 1 token per pass), or beyond its physical limit."""
    lim = defined_range(fig) or limit(fig, measured)
    if isinstance(lim, str) or not lim.broken_by(fig.value):
        return None
    sign = "≤" if lim.bound == "max" else "≥"
    return finding(
        "implausible",
        (fig.id,),
        f"{fig.metric} {sign} {lim.value:.4g} {fig.unit} ({lim.basis})",
        f"{_show(fig.value)} {fig.unit}",
    )


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(f"{v:.4g}" for v in value) + "]"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
