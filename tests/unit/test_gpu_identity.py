"""A measured job is refused at plan time when this machine's GPU is not the card its hardware profile
describes: lent machines of one size come as an H100 or an H200, and a record written under the wrong
profile would carry one card's figures under the other's name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.measure import gpu_identity
from specexp.run.plan import make_cell
from specexp.spec import paths

H100 = ("NVIDIA H100 80GB HBM3",)
H200 = ("NVIDIA H200",)


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> Callable[[tuple[str, ...] | None], None]:
    """Make this machine's NVML answer with these GPU names (None: no NVML)."""

    def set_names(names: tuple[str, ...] | None) -> None:
        monkeypatch.setattr(gpu_identity, "local_gpu_names", lambda: names)

    return set_names


def test_a_vllm_job_for_an_h200_is_refused_on_an_h100_and_told_the_profile_that_fits(
    make_spec: Callable[..., Any], gpus: Callable[[tuple[str, ...] | None], None]
) -> None:
    gpus(H100)
    cell = make_cell(make_spec("runtime=vllm", "hardware=h200"))
    assert cell.refuse_kind == "hardware_mismatch"
    reason = cell.refuse_reason or ""
    assert "hardware=h200" in reason and "'NVIDIA H100 80GB HBM3'" in reason
    assert "set hardware=h100" in reason
    assert make_cell(make_spec("runtime=vllm", "hardware=h100")).refuse_reason is None


def test_the_right_card_passes_and_so_does_what_cannot_be_told(
    make_spec: Callable[..., Any], gpus: Callable[[tuple[str, ...] | None], None]
) -> None:
    gpus(H200)
    assert make_cell(make_spec("runtime=sglang", "hardware=h200")).refuse_reason is None
    gpus(None)  # no NVML here: nothing known against the profile
    assert make_cell(make_spec("runtime=vllm", "hardware=h200")).refuse_reason is None


def test_the_simulator_and_a_server_reached_elsewhere_are_not_asked(
    make_spec: Callable[..., Any], gpus: Callable[[tuple[str, ...] | None], None]
) -> None:
    gpus(H100)
    assert make_cell(make_spec("hardware=h200")).refuse_reason is None  # runtime=sim
    reached = make_spec("runtime=vllm", "hardware=h200", "runtime.url=http://10.0.0.7:8000")
    assert make_cell(reached).refuse_reason is None


def test_a_card_no_profile_names_gets_the_way_out_and_too_few_gpus_are_named(
    make_spec: Callable[..., Any],
) -> None:
    spec = make_spec("runtime=vllm", "hardware=h100")
    said = gpu_identity.mismatch(spec.hardware, ("NVIDIA L40S",))
    assert said is not None and "'NVIDIA L40S'" in said and "add its name to device_names" in said
    two = spec.hardware.model_copy(update={"gpu_count": 2})
    said = gpu_identity.mismatch(two, H100)
    assert said is not None and "gpu_count 2" in said and "1 GPU(s)" in said
    assert gpu_identity.mismatch(two, H100 * 2) is None


def test_device_names_stay_out_of_run_ids(make_spec: Callable[..., Any]) -> None:
    spec = make_spec("hardware=h200")
    renamed = spec.model_copy(
        update={"hardware": spec.hardware.model_copy(update={"device_names": ["H200 NVL"]})}
    )
    assert make_cell(spec).run_id == make_cell(renamed).run_id


def test_the_gpus_a_server_would_use_follow_cuda_visible_devices() -> None:
    names, uuids = ["NVIDIA H100 80GB HBM3", "NVIDIA H200"], ["GPU-aaaa-1111", "GPU-bbbb-2222"]
    visible = gpu_identity.visible_indices
    assert visible(names, uuids, None) == [0, 1]
    assert visible(names, uuids, "1") == [1]
    assert visible(names, uuids, "GPU-bbbb,0") == [1, 0]
    assert visible(names, uuids, "5") is None  # a device NVML does not know: not told
    assert visible(names, uuids, "GPU-") is None  # a prefix of both: CUDA refuses it too
    # two kinds of card numbered fastest first (CUDA's default): NVML's bus order is not CUDA's
    assert visible(names, uuids, "0", order="FASTEST_FIRST") is None
    assert visible(names[:1] * 2, uuids, "1", order="FASTEST_FIRST") == [1]


def test_a_gh200_is_not_taken_for_an_h200_and_a_broken_user_profile_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gpu_identity.names_fit(["H200"], "NVIDIA H200")
    assert not gpu_identity.names_fit(["H200"], "NVIDIA GH200 480GB")
    assert gpu_identity.profiles_naming("NVIDIA GH200 480GB") == []
    folder = tmp_path / "hardware"
    folder.mkdir()
    (folder / "broken.yaml").write_text("name: broken\ndevice_names: [H100\n")
    (folder / "unset.yaml").write_text("name: unset\ndevice_names: ${oc.env:SPECEXP_NO_SUCH_VAR}\n")
    (folder / "string.yaml").write_text("name: string\ndevice_names: H100\n")
    monkeypatch.setattr(paths, "_user_dirs", [tmp_path])
    assert gpu_identity.profiles_naming("NVIDIA H100 80GB HBM3") == ["h100"]


def test_jobs_that_run_on_other_machines_are_not_checked_here(
    make_spec: Callable[..., Any], gpus: Callable[[tuple[str, ...] | None], None]
) -> None:
    gpus(H100)
    spec = make_spec("runtime=vllm", "hardware=h200")
    try:
        gpu_identity.servers_here(False)  # a SLURM or Ray launcher: each node checks its own
        assert make_cell(spec).refuse_reason is None
    finally:
        gpu_identity.servers_here(True)
    assert make_cell(spec).refuse_kind == "hardware_mismatch"
