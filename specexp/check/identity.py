"""output_identical, judged when records are read: a drafter's completions vs the baseline's.

Records keep the facts: a digest of each completion per request id. Requests of the same
workload carry the same ids in every job of a sweep, so at temperature 0 a drafter run's
completions can be compared with those of its drafter=none baseline (the vocabulary's one
baseline rule) without keeping the text. Jobs never read each other's records; reports and
checks call this.
"""

from __future__ import annotations

from collections.abc import Sequence

from specexp.record import RunRecord
from specexp.spec.vocabulary import Baselines, C


def output_identity(records: Sequence[RunRecord]) -> dict[tuple[str, int], bool]:
    """(run id, measurement index) -> whether its completions equal the baseline's, for every
    measurement of a drafter run at temperature 0 that shares requests with a baseline."""
    baselines = Baselines(
        (r for r in records if r.status == "ok"), lambda r: r.conditions.model_dump()
    )
    judged: dict[tuple[str, int], bool] = {}
    for record in records:
        conditions = record.conditions.model_dump()
        if conditions.get(C.temperature) != 0:
            continue
        base = baselines.of(conditions)
        if base is None:
            continue
        theirs: dict[str, str] = {}
        for m in base.measurements:
            theirs.update(m.completions)
        for i, m in enumerate(record.measurements):
            shared = [rid for rid in m.completions if rid in theirs]
            if shared:
                judged[(record.run_id, i)] = all(
                    m.completions[rid] == theirs[rid] for rid in shared
                )
    return judged
