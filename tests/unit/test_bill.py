"""The bill: dollars per million completion tokens at the prices the user set, from time
(`usd_per_gpu_hour` over `aggregate_tps`) and from measured GPU energy (`usd_per_kwh`), recorded
with both prices as conditions, and never made without a price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specexp.check.relevance import relevant
from specexp.measure.bill import bill
from specexp.record import find_records
from specexp.run.plan import _server_key
from tests.conftest import run_specexp

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "benchmarks/data/h200-vllm-2026-12-03-2/sweeps/h200_vllm_hybrid"


def _lines(sweep: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (sweep / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sweep = tmp_path_factory.mktemp("priced")
    done = run_specexp(
        "-m",
        "workload=concurrency",
        "workload.concurrency=[1,8]",
        "drafter=mtp",
        "k=3",
        "hardware.usd_per_gpu_hour=2.5",
        "hardware.usd_per_kwh=0.15",
        f"hydra.sweep.dir={sweep}",
    )
    assert done.returncode == 0, done.stderr
    return sweep


def test_the_bill_from_time_is_the_hourly_price_over_the_rate_measured(priced: Path) -> None:
    lines = _lines(priced)
    assert len(lines) == 4  # mtp and its baseline, at 1 and 8 streams
    for line in lines:
        c, m = line["conditions"], line["metrics"]
        assert c["usd_per_gpu_hour"] == 2.5 and c["usd_per_kwh"] == 0.15 and c["gpu_count"] == 1
        assert m["usd_per_mtok"] == pytest.approx(2.5 * 1e6 / (3600 * m["aggregate_tps"]))
        # the simulator models no power: no energy, so no bill from it
        assert m["energy_j_per_token"] is None and m["usd_per_mtok_energy"] is None


def test_the_report_puts_each_drafters_bill_beside_no_drafters(priced: Path) -> None:
    report = (priced / "measurements.md").read_text()
    section = report[report.index("## The bill") :]
    section = section[: section.index("\n## ")]
    lines = _lines(priced)
    at_8 = {
        x["conditions"]["drafter"]: x["metrics"]
        for x in lines
        if x["conditions"]["concurrency"] == 8
    }
    ratio = at_8["mtp"]["usd_per_mtok"] / at_8["none"]["usd_per_mtok"]
    assert ratio < 1  # the simulated drafter serves more tokens per GPU-hour at 8 streams
    assert f"{ratio:.2f}×" in section
    assert "no measured GPU energy" in section  # usd_per_kwh was set, and why it gave no bill
    cheapest = min(lines, key=lambda x: x["metrics"]["usd_per_mtok"])
    assert f"`{cheapest['conditions']['drafter']}` k=3 at concurrency 8" in section


def test_no_price_no_bill(tmp_path: Path) -> None:
    done = run_specexp("-m", "workload.output_tokens=64", f"hydra.sweep.dir={tmp_path}")
    assert done.returncode == 0, done.stderr
    (line,) = _lines(tmp_path)
    assert line["conditions"]["usd_per_gpu_hour"] is None
    assert line["metrics"]["usd_per_mtok"] is None
    assert "The bill" not in (tmp_path / "measurements.md").read_text()


def test_a_price_that_is_not_one_is_refused_before_anything_runs(tmp_path: Path) -> None:
    done = run_specexp("hardware.usd_per_gpu_hour=-2", f"hydra.run.dir={tmp_path}")
    assert done.returncode != 0
    assert "usd_per_gpu_hour" in done.stderr and "greater than 0" in done.stderr
    assert not list(tmp_path.rglob("result.json"))


def test_a_price_does_not_start_another_server(make_spec: Any) -> None:
    plain = make_spec("runtime=llamacpp", "model=tiny", "quantization=f32", "hardware=cpu")
    priced = make_spec(
        "runtime=llamacpp",
        "model=tiny",
        "quantization=f32",
        "hardware=cpu",
        "hardware.usd_per_gpu_hour=0.1",
    )
    assert _server_key(plain) == _server_key(priced)


def test_the_bill_from_energy_prices_the_joules_a_real_gpu_measured() -> None:
    """An H200's records (vLLM, NVML energy) priced after the fact: joules per token x 10^6 / 3.6 MJ per
    kWh x the price."""
    found = find_records([H200])
    measured = [
        m for _, r in found for m in r.measurements if m.metrics.energy_j_per_token is not None
    ]
    assert measured
    for m in measured[:20]:
        c = m.conditions.model_copy(update={"usd_per_kwh": 0.2, "usd_per_gpu_hour": 3.0})
        got = bill(c, m.metrics, prefill_only=False)
        assert got["usd_per_mtok_energy"] == pytest.approx(
            m.metrics.energy_j_per_token * 1e6 / 3.6e6 * 0.2
        )
        assert got["usd_per_mtok"] == pytest.approx(3.0 * 1e6 / (3600 * m.metrics.aggregate_tps))
        assert bill(c, m.metrics, prefill_only=True) == {
            "usd_per_mtok": None,
            "usd_per_mtok_energy": None,
        }


def test_a_cpu_server_is_billed_as_one_whole_server() -> None:
    found = find_records([REPO / "reports/cpu_real_pair"])
    m = next(m for _, r in found for m in r.measurements if m.metrics.aggregate_tps)
    assert m.conditions.gpu_count == 0
    c = m.conditions.model_copy(update={"usd_per_gpu_hour": 0.05})
    got = bill(c, m.metrics, prefill_only=False)["usd_per_mtok"]
    assert got == pytest.approx(0.05 * 1e6 / (3600 * m.metrics.aggregate_tps))


def test_the_checker_says_a_bill_moves_with_its_price_and_a_rate_does_not() -> None:
    assert "usd_per_gpu_hour" in relevant("usd_per_mtok")
    assert "concurrency" in relevant("usd_per_mtok")  # what moves the rate moves its bill
    assert "usd_per_kwh" in relevant("usd_per_mtok_energy")
    assert "usd_per_kwh" not in relevant("usd_per_mtok")
    assert "usd_per_gpu_hour" not in relevant("decode_tps")
    assert "usd_per_gpu_hour" not in relevant("aggregate_tps")
