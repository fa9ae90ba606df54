"""Every override an error message suggests composes: a user who pastes the hint gets past the
error (Hydra refuses `workload.material=...` on a workload without that key, so such a hint must
be written `++workload.material=...`)."""

from __future__ import annotations

import re

import pytest

from specexp.run.compose import build_spec
from specexp.spec import paths
from specexp.spec.errors import SpecError

HINT = re.compile(r"set (\+{0,2}[a-z_]+(?:\.[a-z_]+)+=\S+?)(?=[\s,;)]|$)")
TRIGGERS = ["workload.prompt_tokens=100", "++workload.prompt_lengths=[100]"]


def _hints(error: SpecError) -> list[str]:
    return [h.replace("[N]", "[100]") for h in HINT.findall(str(error))]


@pytest.mark.parametrize("workload", paths.options("workload"))
@pytest.mark.parametrize("trigger", TRIGGERS)
def test_every_suggested_override_composes(workload: str, trigger: str) -> None:
    overrides = [f"workload={workload}", trigger]
    try:
        build_spec(overrides)
    except SpecError as err:
        hints = _hints(err)
        assert hints, f"an error about an override suggests none that composes: {err}"
        for hint in hints:  # "... instead" replaces the override; otherwise the hint is added to it
            kept = [o for o in overrides if o != trigger] if "instead" in str(err) else overrides
            build_spec([*kept, hint])  # raises if the hint does not compose or does not fix it


def test_the_hints_of_a_workload_without_material_are_tried() -> None:
    with pytest.raises(SpecError) as err:
        build_spec(["workload=fresh_generation", "workload.prompt_tokens=100"])
    assert _hints(err.value) == ["++workload.material=prose"]
    spec = build_spec(
        ["workload=fresh_generation", "workload.prompt_tokens=100", "++workload.material=prose"]
    )
    assert spec.workload.material == "prose" and spec.workload.prompt_tokens == 100
