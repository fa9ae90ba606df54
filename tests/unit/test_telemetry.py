"""specexp.measure.telemetry: GPU sampling around a window, and a recorded reason wherever there is none."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from specexp.measure import telemetry
from specexp.measure.events import RequestTrace
from specexp.measure.metrics import energy_metrics


@pytest.mark.parametrize(
    ("source", "gpus", "reason"),
    [
        ("simulated", 1, "simulated run: no device to sample"),
        ("measured", 0, "hardware=cpu has no GPU (gpu_count 0)"),
    ],
)
def test_nothing_to_sample_is_a_no_op_with_its_reason(source: str, gpus: int, reason: str) -> None:
    sampler = telemetry.sampler_for(source, gpus, "cpu")
    with sampler.window() as window:
        pass
    assert window.summary == {"source": None, "reason": reason}
    assert energy_metrics(window.summary, [], prefill_only=False) == {
        "mean_power_w": None,
        "energy_j_per_token": None,
    }


def test_a_gpu_run_without_nvml_records_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        __import__("sys").modules, "pynvml", None
    )  # as if nvidia-ml-py were not installed
    sampler = telemetry.sampler_for("measured", 1, "h200")
    with sampler.window() as window:
        pass
    assert window.summary["source"] is None
    assert "nvidia-ml-py is not installed" in window.summary["reason"]


class FakeNvml:
    """The few NVML calls the sampler makes, for a device that draws `watts` and counts energy
    (`energy=False`: a device without the total-energy counter)."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1

    class NVMLError(Exception):
        pass

    def __init__(self, watts: float, energy: bool = True) -> None:
        self.watts, self.energy, self.t0 = watts, energy, time.monotonic()

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H200"

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        if not self.energy:
            raise self.NVMLError("Not Supported")
        return int((time.monotonic() - self.t0) * self.watts * 1000)  # mJ

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return int(self.watts * 1000)  # mW

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(used=20 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=90, memory=70)

    def nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        return 1980 if kind == self.NVML_CLOCK_SM else 3201

    def nvmlShutdown(self) -> None:
        pass


@pytest.mark.parametrize("counter", [True, False])
def test_energy_and_power_over_a_window(counter: bool) -> None:
    sampler = telemetry.NvmlSampler(FakeNvml(400.0, energy=counter), interval_s=0.01)
    with sampler.window() as window:
        time.sleep(0.2)
    s = window.summary
    assert s["source"] == "nvml" and s["devices"] == ["NVIDIA H200"] and s["samples"] >= 2
    assert s["energy_method"] == (
        "nvmlDeviceGetTotalEnergyConsumption" if counter else "sampled power, trapezoid rule"
    )
    # a constant 400 W over the window: the energy is 400 W x its duration (the sampled integral
    # covers first to last sample, a little less than the window)
    assert s["energy_j"] == pytest.approx(400.0 * s["duration_s"], rel=0.01 if counter else 0.5)
    assert s["mean_power_w"] == pytest.approx(s["energy_j"] / s["duration_s"])
    assert (s["memory_used_mib_max"], s["gpu_util_pct_mean"], s["sm_clock_mhz_mean"]) == (
        20 * 1024,
        90,
        1980,
    )
    trace = RequestTrace("r", 0.0, (), prompt_tokens=100, completion_tokens=50)
    per_token = energy_metrics(s, [trace], prefill_only=False)["energy_j_per_token"]
    assert per_token == pytest.approx(s["energy_j"] / 50)
    assert energy_metrics(s, [trace], prefill_only=True)["energy_j_per_token"] == pytest.approx(
        s["energy_j"] / 100
    )


class StillCounter(FakeNvml):
    """A device whose energy counter has not refreshed since the window began."""

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return 1_000_000


def test_a_window_shorter_than_the_energy_counters_refresh_has_no_energy() -> None:
    # On an H100, a 32 ms window of one prefill drew 156 W by the one sample taken, and NVML's counter
    # read the same before and after: 0 J would say the card drew nothing.
    sampler = telemetry.NvmlSampler(StillCounter(156.0), interval_s=0.01)
    with sampler.window() as window:
        time.sleep(0.05)
    s = window.summary
    assert s["samples"] >= 1 and s["max_power_w"] == pytest.approx(156.0)
    assert s["energy_j"] is None and s["mean_power_w"] is None and "too coarse" in s["reason"]
    trace = RequestTrace("r", 0.0, (), prompt_tokens=100, completion_tokens=1)
    assert energy_metrics(s, [trace], prefill_only=True)["energy_j_per_token"] is None


class SteppedCounter(FakeNvml):
    """A counter that moved one coarse step (120 J) within a short window."""

    def __init__(self, watts: float) -> None:
        super().__init__(watts)
        self.reads = 0

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        self.reads += 1
        return 1_000_000 + (120_000 if self.reads > 1 else 0)


def test_a_window_that_the_counter_stepped_over_once_has_no_energy() -> None:
    # 120 J over a window of well under a second is far above the 100 W the samples read.
    sampler = telemetry.NvmlSampler(SteppedCounter(100.0), interval_s=0.01)
    with sampler.window() as window:
        time.sleep(0.05)
    s = window.summary
    assert s["energy_j"] is None and s["mean_power_w"] is None and "too coarse" in s["reason"]


class TwoCards(FakeNvml):
    """Two devices, told apart by name."""

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return [b"NVIDIA H200", b"NVIDIA H100 80GB HBM3"][h]


def test_the_gpus_sampled_are_those_cuda_visible_devices_gives_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from specexp.measure import gpu_identity

    monkeypatch.setitem(__import__("sys").modules, "pynvml", TwoCards(100.0))
    monkeypatch.setattr(gpu_identity, "local_gpu_indices", lambda: [1])  # CUDA_VISIBLE_DEVICES=1
    sampler = telemetry.sampler_for("measured", 1, "h100")
    assert isinstance(sampler, telemetry.NvmlSampler)
    assert sampler.names == ["NVIDIA H100 80GB HBM3"]
    monkeypatch.setattr(gpu_identity, "local_gpu_indices", lambda: None)  # not told: the first ones
    first = telemetry.sampler_for("measured", 1, "h200")
    assert isinstance(first, telemetry.NvmlSampler) and first.names == ["NVIDIA H200"]
