"""GPU telemetry over a measurement window, read through NVML (`nvidia-ml-py`, the `gpu` extra).

While a window runs, a thread samples every GPU the server uses for power, memory used,
utilisation and clocks; energy is the change of NVML's total-energy counter over the window
(millijoules since the driver loaded, Volta and later), or, where a device has no such counter,
the integral of the sampled power. Each window gets a summary dict for the record. Where there is
nothing to sample (a simulated run, CPU hardware, no nvidia-ml-py, no driver) every window gets
``{"source": None, "reason": ...}`` instead, and the energy metrics are unknown.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from specexp.measure import gpu_identity
from specexp.spec.vocabulary import M

INTERVAL_S = 0.05
"""Sampling period. NVML refreshes power about every 20-100 ms, depending on the device."""


@dataclass
class WindowTelemetry:
    """What one window's sampling found; `summary` is filled when the window ends."""

    summary: dict[str, Any] = field(default_factory=dict)


class NoTelemetry:
    """Nothing to sample: every window records why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @contextmanager
    def window(self) -> Iterator[WindowTelemetry]:
        yield WindowTelemetry({"source": None, "reason": self.reason})

    def close(self) -> None:
        pass


class NvmlSampler:
    """Samples NVML devices `indices` (all when None) during each `window()`."""

    def __init__(
        self, nvml: Any, indices: list[int] | None = None, interval_s: float = INTERVAL_S
    ) -> None:
        self.nvml, self.interval_s = nvml, interval_s
        count = nvml.nvmlDeviceGetCount()
        self.handles = [
            nvml.nvmlDeviceGetHandleByIndex(i)
            for i in (indices if indices is not None else range(count))
        ]
        self.names = [_text(nvml.nvmlDeviceGetName(h)) for h in self.handles]
        self.driver = _text(nvml.nvmlSystemGetDriverVersion())

    def _energy_mj(self) -> list[float | None]:
        out: list[float | None] = []
        for h in self.handles:
            try:
                out.append(float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)))
            except self.nvml.NVMLError:
                out.append(None)
        return out

    def _sample(self) -> dict[str, float]:
        """One reading, summed (power, memory) or averaged (utilisation, clocks) over the devices."""
        nvml, rows = self.nvml, []
        for h in self.handles:
            util = nvml.nvmlDeviceGetUtilizationRates(h)
            rows.append(
                (
                    nvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20,
                    float(util.gpu),
                    float(util.memory),
                    float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                    float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)),
                )
            )
        n = len(rows)
        return {
            "t": time.monotonic(),
            "power_w": sum(r[0] for r in rows),
            "memory_used_mib": sum(r[1] for r in rows),
            "gpu_util_pct": sum(r[2] for r in rows) / n,
            "mem_util_pct": sum(r[3] for r in rows) / n,
            "sm_clock_mhz": sum(r[4] for r in rows) / n,
            "mem_clock_mhz": sum(r[5] for r in rows) / n,
        }

    @contextmanager
    def window(self) -> Iterator[WindowTelemetry]:
        out = WindowTelemetry()
        samples: list[dict[str, float]] = []
        errors: list[str] = []
        stop = threading.Event()

        def run() -> None:
            while True:
                try:
                    samples.append(self._sample())
                except (
                    self.nvml.NVMLError
                ) as err:  # a device that stops answering: say so, keep the rest
                    errors.append(str(err))
                    return
                if stop.wait(self.interval_s):
                    return

        energy_before, started = self._energy_mj(), time.monotonic()
        thread = threading.Thread(target=run, name="specexp-nvml", daemon=True)
        thread.start()
        try:
            yield out
        finally:
            stop.set()
            thread.join()
            ended = time.monotonic()
            out.summary = self._summary(
                samples, energy_before, self._energy_mj(), ended - started, errors
            )

    def _summary(
        self,
        samples: list[dict[str, float]],
        before: list[float | None],
        after: list[float | None],
        duration_s: float,
        errors: list[str],
    ) -> dict[str, Any]:
        summary: dict[str, Any] = {
            "source": "nvml",
            "devices": self.names,
            "driver": self.driver,
            "duration_s": duration_s,
            "samples": len(samples),
            "interval_s": self.interval_s,
        }
        if errors:
            summary["errors"] = errors
        if not samples:
            return {
                **summary,
                "energy_j": None,
                "reason": "no NVML sample was taken during the window",
            }
        counters = [(b, a) for b, a in zip(before, after) if b is not None and a is not None]
        counted = sum(a - b for b, a in counters) / 1000.0
        coarse = _coarse(counted, duration_s, samples)
        if len(counters) == len(before) == len(after) and coarse:
            summary["energy_j"] = None
            summary["reason"] = coarse
        elif len(counters) == len(before) == len(after):
            summary["energy_j"] = counted
            summary["energy_method"] = "nvmlDeviceGetTotalEnergyConsumption"
        else:
            summary["energy_j"] = _integral(samples)
            summary["energy_method"] = "sampled power, trapezoid rule"
        summary[M.mean_power_w] = (
            summary["energy_j"] / duration_s
            if duration_s > 0 and summary["energy_j"] is not None
            else None
        )
        summary["max_power_w"] = max(s["power_w"] for s in samples)
        summary["memory_used_mib_max"] = max(s["memory_used_mib"] for s in samples)
        for key in ("gpu_util_pct", "mem_util_pct", "sm_clock_mhz", "mem_clock_mhz"):
            summary[f"{key}_mean"] = statistics.fmean(s[key] for s in samples)
        summary["sm_clock_mhz_min"] = min(s["sm_clock_mhz"] for s in samples)
        return summary

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except self.nvml.NVMLError:
            pass


COUNTER_MARGIN = 1.5
"""How far outside the sampled power the energy counter's mean power over a window may lie before the
counter is judged too coarse for it (_coarse)."""


def _coarse(energy_j: float, duration_s: float, samples: list[dict[str, float]]) -> str | None:
    """Why NVML's energy counter cannot be read over this window, or None. The counter moves in steps
    (about 12 J on an H100, several times a short window's energy), so over a window of a few tens of ms
    it stands still or moves one step: 0 W, or 728 W where the power samples read 158 W at most. Where
    the counter's mean power lies outside the sampled range, widened by COUNTER_MARGIN, it is unknown."""
    if duration_s <= 0 or not samples:
        return None
    power = energy_j / duration_s
    low = min(s["power_w"] for s in samples) / COUNTER_MARGIN
    high = max(s["power_w"] for s in samples) * COUNTER_MARGIN
    if low <= power <= high:
        return None
    return (
        f"NVML's energy counter gives {power:.0f} W over the window, outside the "
        f"{low * COUNTER_MARGIN:.0f}-{high / COUNTER_MARGIN:.0f} W its samples read: its steps are "
        "too coarse for a window this short"
    )


def _integral(samples: list[dict[str, float]]) -> float | None:
    if len(samples) < 2:
        return None
    return sum(
        (b["t"] - a["t"]) * (a["power_w"] + b["power_w"]) / 2 for a, b in zip(samples, samples[1:])
    )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def sampler_for(source: str, gpu_count: int, hardware: str) -> NvmlSampler | NoTelemetry:
    """The sampler of a job: NVML for a measured run on GPU hardware, else a recorded reason."""
    if source != "measured":
        return NoTelemetry(f"{source} run: no device to sample")
    if gpu_count < 1:
        return NoTelemetry(f"hardware={hardware} has no GPU (gpu_count 0)")
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return NoTelemetry("nvidia-ml-py is not installed (pip install 'specexp[gpu]')")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        return NoTelemetry(f"NVML did not initialise: {err}")
    try:
        count = pynvml.nvmlDeviceGetCount()
        visible = (
            gpu_identity.local_gpu_indices()
        )  # the devices CUDA_VISIBLE_DEVICES gives a server
        used = visible[:gpu_count] if visible is not None else list(range(min(gpu_count, count)))
        return NvmlSampler(pynvml, used)
    except pynvml.NVMLError as err:
        pynvml.nvmlShutdown()
        return NoTelemetry(f"NVML could not open the devices: {err}")
