"""Drafters lose at two slots or more on a machine short of bandwidth and compute, for the reason the
roofline gives (docs/studies.md, "Effects the field reports"). specexp measured it itself: llama-server
on this 2-core CPU with trained weights (Qwen2.5-Coder-1.5B Q4_K_M, edit_heavy, reports/cpu_real_pair)
gained 1.4x from n-gram lookup at one slot, 1.2x at two and nothing at four, and its 0.5B draft model
lost a quarter of the throughput at two and four slots. The simulator, given only the acceptance the
engine counted (specexp.fit.replay), gives each of those figures within 15 % and shows why: a plain
step of one slot is the weights' read, but a verify pass of k + 1 tokens a slot is already matmul
compute on such a machine, so more slots leave no idle compute for speculation to fill."""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.fit.replay import sim_overrides
from specexp.record import RunRecord, read_record
from specexp.record.schema import Measurement
from tests.unit.sim.simulated import simulate

STUDY = Path(__file__).resolve().parents[3] / "reports" / "cpu_real_pair"
SLOTS = (1, 2, 4)


def measured(drafter: str) -> RunRecord:
    (folder,) = STUDY.glob(f"workload=edit_heavy,*concurrency=_1,2,4_,drafter={drafter},*")
    return read_record(folder / "result.json")


def by_slots(found: list[Measurement]) -> dict[int, Measurement]:
    return {int(m.conditions.concurrency or 0): m for m in found}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, dict[int, Measurement]]]:
    """Per drafter: the measured job's measurements and the simulated ones, by slots in use."""
    out: dict[str, dict[str, dict[int, Measurement]]] = {}
    for drafter in ("none", "ngram", "draft_model"):
        record = measured(drafter)
        found, _ = simulate(sim_overrides(record, "llamacpp"))
        out[drafter] = {"measured": by_slots(record.measurements), "simulated": by_slots(found)}
    return out


def gain(runs: dict, drafter: str, source: str, metric: str) -> dict[int, float]:
    arm, none = runs[drafter][source], runs["none"][source]
    return {
        c: float(arm[c].metrics.get(metric)) / float(none[c].metrics.get(metric)) for c in SLOTS
    }


def test_the_drafters_gain_fades_with_slots_to_a_loss_as_measured(runs: dict) -> None:
    # The draft model's one-slot figure is left out: measured at 1.06x (1.15x in decode_tps) in this
    # job, it stands above the one-stream sweep's own k = 2 and 8 (0.87x, 0.90x in decode_tps), where
    # the simulator's 0.90x is (docs/studies.md).
    for drafter, slots in (("ngram", SLOTS), ("draft_model", (2, 4))):
        sim = gain(runs, drafter, "simulated", "aggregate_tps")
        real = gain(runs, drafter, "measured", "aggregate_tps")
        for c in slots:
            assert sim[c] == pytest.approx(real[c], rel=0.15), (drafter, c, sim, real)
    ngram = gain(runs, "ngram", "simulated", "aggregate_tps")
    assert ngram[1] > ngram[2] > ngram[4] and ngram[4] < 1.1  # fades to nothing at four slots
    draft = gain(runs, "draft_model", "simulated", "aggregate_tps")
    assert draft[2] < 0.9 and draft[4] < 0.9  # and a draft model loses outright


def test_the_reason_is_compute_a_verify_pass_already_spends(runs: dict) -> None:
    def share(m: Measurement, name: str) -> float:
        costs = (m.step_costs or {})["decode"]
        return costs[name] / sum(costs.values())

    none, ngram = runs["none"]["simulated"], runs["ngram"]["simulated"]
    assert share(none[1], "weights_read") > 0.6  # one plain slot reads the weights and waits
    assert share(none[4], "matmul_compute") > 0.5  # four plain slots fill the compute
    assert share(ngram[1], "matmul_compute") > share(
        ngram[1], "weights_read"
    )  # as 5 tokens of one do
