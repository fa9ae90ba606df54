"""The bill of a measurement: what a million completion tokens cost at the prices the user set
(`hardware.usd_per_gpu_hour`, `hardware.usd_per_kwh`; docs/vocabulary.md, `usd_per_mtok` and
`usd_per_mtok_energy`). No price, no bill: specexp never assumes one."""

from __future__ import annotations

from specexp.record.fields import Conditions, Metrics
from specexp.spec.vocabulary import M

SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6
MILLION = 1e6


def usd_per_mtok(
    usd_per_gpu_hour: float | None, gpu_count: int | None, tps: float | None
) -> float | None:
    """Dollars per million tokens served at `tps` tokens per second on `gpu_count` GPUs billed at
    `usd_per_gpu_hour` each (gpu_count 0: a CPU-only server, billed as one); None where any is
    unknown."""
    if usd_per_gpu_hour is None or gpu_count is None or not tps or tps <= 0:
        return None
    hourly = usd_per_gpu_hour * max(gpu_count, 1)
    return hourly * MILLION / (SECONDS_PER_HOUR * tps)


def usd_per_mtok_energy(usd_per_kwh: float | None, joules_per_token: float | None) -> float | None:
    """Dollars of energy per million tokens at `joules_per_token`, billed at `usd_per_kwh`."""
    if usd_per_kwh is None or joules_per_token is None:
        return None
    return joules_per_token * MILLION / JOULES_PER_KWH * usd_per_kwh


def bill(
    conditions: Conditions, metrics: Metrics, *, prefill_only: bool
) -> dict[str, float | None]:
    """Both bills of one measurement from its own conditions and figures (none for a prefill-only
    one: it makes no completion tokens to bill)."""
    if prefill_only:
        return {M.usd_per_mtok: None, M.usd_per_mtok_energy: None}
    return {
        M.usd_per_mtok: usd_per_mtok(
            conditions.usd_per_gpu_hour, conditions.gpu_count, metrics.aggregate_tps
        ),
        M.usd_per_mtok_energy: usd_per_mtok_energy(
            conditions.usd_per_kwh, metrics.energy_j_per_token
        ),
    }
