"""The sweep plan: canonical cells, content-hash run ids, meaningless cells with a reason.

A cell is one job. Cells that mean nothing (a `k` with `drafter=none`, `mtp` on a model
without an MTP head) are not run; cells that differ only in such meaningless settings share
a run id, so a sweep runs them once. Cells are ordered so that each server configuration
starts once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specexp.measure import gpu_identity
from specexp.runtimes.base import runtime_for
from specexp.sim.context import model_context
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.runtime import RUN_ID_DEFAULTS, real_engines

OPERATIONAL = (
    "start_timeout_s",
    "request_timeout_s",
    "stall_timeout_s",
    "api_key_env",
    "executable",
)
"""Runtime settings that cannot move a number: left out of the run id, so the same cell on two
machines (another binary path, longer timeouts) has the same id."""


@dataclass(frozen=True)
class Cell:
    """One job of a sweep, after canonicalization."""

    spec: ExperimentSpec
    run_id: str
    server_key: str
    """Equal for cells one running server can serve."""
    skip_reason: str | None = None
    """Why the cell is not run, when it means nothing."""
    refuse_reason: str | None = None
    """Why no server could serve the cell, known before any starts (its requests do not fit the
    context; the simulator asked for text): recorded as refused, and the sweep goes on."""
    refuse_kind: str = "context_too_long"
    """The refused record's error kind: context_too_long, no_text (the simulator),
    unsupported_drafter (the installed engine's version lacks it), or hardware_mismatch (this
    machine's GPU is not the one the hardware profile describes)."""
    note: str | None = None
    """What canonicalization changed (e.g. a k dropped for drafter=none)."""


def make_cell(spec: ExperimentSpec) -> Cell:
    """Canonicalize one composed spec (its k already resolved) into a cell."""
    note = None
    if spec.drafter.kind == "none" and spec.requested_k is not None:
        note = f"k={spec.requested_k} means nothing with drafter=none: run once without k"
    canonical = spec
    if spec.drafter.kind != "draft_model":
        canonical = canonical.model_copy(update={"draft_model": None})
    refusal = _refusal(canonical)
    return Cell(
        spec=canonical,
        run_id=_digest(
            canonical,
            exclude={
                "experiment": True,
                "requested_k": True,
                "stated": True,
                "add_baseline": True,
                "runtime": set(OPERATIONAL),
            },
        ),
        server_key=_server_key(canonical),
        skip_reason=_meaningless(canonical),
        refuse_reason=refusal[1] if refusal else None,
        refuse_kind=refusal[0] if refusal else "context_too_long",
        note=note,
    )


def engine_refusal(spec: ExperimentSpec) -> str | None:
    """What the runtime knows before it starts that rules the cell out (specexp.runtimes.base
    `Runtime.plan_refusal`): an Ollama too old to draft, say. A meaningless cell is not asked."""
    if _meaningless(spec) is not None:
        return None
    return runtime_for(spec.runtime.name).plan_refusal(spec)


def hardware_refusal(spec: ExperimentSpec) -> str | None:
    """Why a measured job that would start its server on this machine cannot: its GPU is not the card
    the hardware profile describes (specexp.measure.gpu_identity), so every figure would carry another
    card's name. Not asked for the simulator, a server reached at `runtime.url`, or a sweep whose jobs
    run on other machines (`gpu_identity.servers_here`)."""
    if spec.runtime.simulated or getattr(spec.runtime, "url", None):
        return None
    return gpu_identity.mismatch(
        spec.hardware, gpu_identity.gpus_of_servers(), gpu_identity.profiles_naming
    )


def _refusal(spec: ExperimentSpec) -> tuple[str, str] | None:
    """The first reason no server could serve the cell, with its record's error kind."""
    checks = (
        ("no_text", no_text),
        ("context_too_long", too_long),
        ("unsupported_drafter", engine_refusal),
        ("hardware_mismatch", hardware_refusal),
    )
    for kind, check in checks:
        reason = check(spec)
        if reason:
            return kind, reason
    return None


def no_text(spec: ExperimentSpec) -> str | None:
    """Why the simulator cannot answer the cell: the answer checks compare what a model says, and the
    simulator says nothing (its toy sampler, `runtime.toy_sampler`, is for testing the checks)."""
    w = spec.workload
    check = {"samples": "workload.samples", "task": "workload.task"}.get(w.kind)
    if not spec.runtime.simulated or check is None or getattr(spec.runtime, "toy_sampler", None):
        return None
    return (
        f"runtime=sim generates no text, and workload={w.name} ({check}) compares what a model "
        f"answers: run it on a real engine (runtime={', '.join(real_engines()[:-1])} or {real_engines()[-1]})"
    )


def warnings_for(cell: Cell) -> list[str]:
    """What the plan should say about a cell that runs but may not mean what it seems."""
    spec, notes = cell.spec, []
    k, max_k = spec.k, spec.drafter.max_k
    if k is not None and max_k is not None and k > max_k:
        deep = f"position {k}" if k == max_k + 1 else f"positions {max_k + 1}..{k}"
        notes.append(
            f"k={k} exceeds {spec.drafter.name}'s trained block ({max_k}): {deep} accept(s) almost nothing"
        )
    return notes


PRICES = ("usd_per_gpu_hour", "usd_per_kwh")
"""The hardware's prices (the bill): conditions of a run, not of the server it runs on."""


def _server_key(spec: ExperimentSpec) -> str:
    """Equal for cells one started server can serve: everything its argv depends on."""
    fields = {
        "hardware",
        "model",
        "quantization",
        "runtime",
        "drafter",
        "k",
        "draft_model",
        "seed",
        "gpu_shared",
    }
    data = spec.model_dump(mode="json", include=fields)
    for price in PRICES:  # what the user pays is no part of the server
        data["hardware"].pop(price, None)
    data["slots"] = spec.workload.slots
    _drop_unused_interconnect(data)
    _drop_other_devices(data)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _drop_unused_interconnect(data: dict[str, Any]) -> None:
    """What links the GPUs moves no job of one GPU: left out of its id and its server key, which
    stay as they were before hardware files named it."""
    runtime, hardware = data.get("runtime"), data.get("hardware")
    split = isinstance(runtime, dict) and (runtime.get("tensor_parallel") or 1) > 1
    if isinstance(hardware, dict) and not split:
        hardware.pop("interconnect", None)


DEVICE_ENTRIES_ISSUED = {("mtp", "h200")}
"""A drafter's figures for one device (`cost.devices`) that were in every run id when ids were first
issued, and stay there."""


def _drop_other_devices(data: dict[str, Any]) -> None:
    """A drafter's figures for one device move only that device's jobs: the others keep the id they
    had before the figures were added (those of DEVICE_ENTRIES_ISSUED stay in every id)."""
    hardware, drafter = data.get("hardware"), data.get("drafter")
    if not isinstance(hardware, dict) or not isinstance(drafter, dict):
        return
    cost = drafter.get("cost")
    devices = cost.get("devices") if isinstance(cost, dict) else None
    if isinstance(cost, dict) and isinstance(devices, dict):
        for device in list(devices):
            if device != hardware.get("name") and (drafter.get("name"), device) not in (
                DEVICE_ENTRIES_ISSUED
            ):
                devices.pop(device)
        if not devices:  # as a cost without figures for any device is dumped
            cost.pop("devices")


def _meaningless(spec: ExperimentSpec) -> str | None:
    rt = spec.runtime
    if spec.drafter.kind != "none" and rt.drafter_name(spec.drafter.name) is None:
        return (
            f"runtime={rt.name} has no drafter {spec.drafter.name!r} (its drafters: "
            f"{', '.join(sorted(rt.drafters or ()))})"
        )
    if spec.drafter.requires_mtp_head and spec.model.mtp is None:
        return f"drafter={spec.drafter.name} needs an MTP head and model={spec.model.name} has none"
    if spec.drafter.cost.uses_draft_model:
        if spec.draft_model is None:
            return "drafter=draft_model needs draft_model=MODEL (a model id from conf/model/)"
        if spec.draft_model.vocab_size != spec.model.vocab_size:
            return (
                f"draft model {spec.draft_model.name} (vocabulary {spec.draft_model.vocab_size:,}) cannot draft "
                f"for {spec.model.name} (vocabulary {spec.model.vocab_size:,}): a draft model shares the target's vocabulary"
            )
    return None


def too_long(spec: ExperimentSpec) -> str | None:
    """Why the cell's longest request (prompt + output) cannot fit the context the server runs
    with (runtime.max_model_len, else the model's native or YaRN-extended length), with the
    overrides that would fit; None when it fits."""
    w, native = spec.workload, model_context(spec)
    context = spec.runtime.max_model_len or native
    prompt = max(w.prompt_lengths) if w.prompt_lengths else w.prompt_tokens
    need = prompt + w.output_tokens
    if need <= context:
        return None
    where = (
        "runtime.max_model_len"
        if spec.runtime.max_model_len
        else f"model={spec.model.name}'s "
        + ("YaRN-extended context" if spec.model.yarn_factor else "native context")
    )
    fixes = []
    if context - prompt >= 1:
        fixes.append(f"workload.output_tokens={context - prompt}")
    if need <= native and spec.runtime.max_model_len:
        fixes.append(f"runtime.max_model_len={need}")
    lengths = "workload.prompt_lengths" if w.prompt_lengths else "workload.prompt_tokens"
    fixes.append(
        f"{lengths} at most {context - w.output_tokens:,}"
        if context > w.output_tokens
        else "a shorter workload.output_tokens"
    )
    return (
        f"prompt {prompt:,} + output {w.output_tokens:,} = {need:,} tokens exceeds the context of "
        f"{context:,} ({where}); fits with {' or '.join(fixes)}"
    )


ADDED_WHEN_SET = {
    "model": ("moe", "packaged_weights", "draft_model", "attn_output_gate"),
    "draft_model": ("moe", "packaged_weights", "draft_model", "attn_output_gate"),
    "drafter": ("draft_rate", "draft_continue"),
    "hardware": (
        "achieved.serial_batched_matmuls",
        "usd_per_gpu_hour",
        "usd_per_kwh",
        "interconnect",
    ),
    "quantization": ("dequantized_from",),
}
"""Fields added after run ids were first issued: left out of the digest while unset, so that
every earlier cell keeps its id."""


def _digest(spec: ExperimentSpec, **fields: Any) -> str:
    data = spec.model_dump(mode="json", **fields)
    for group, names in ADDED_WHEN_SET.items():
        for name in names:
            *parents, leaf = name.split(".")
            node = data.get(group)
            for part in parents:
                node = node.get(part) if isinstance(node, dict) else None
            if isinstance(node, dict) and node.get(leaf) is None:
                node.pop(leaf, None)
    if (
        "runtime" in data
    ):  # every runtime's keys, as when one model held them: earlier run ids stay valid
        skipped = fields.get("exclude", {}).get("runtime", set())
        data["runtime"] = {
            **{k: v for k, v in RUN_ID_DEFAULTS.items() if k not in skipped},
            **data["runtime"],
        }
    _drop_unused_interconnect(data)
    _drop_other_devices(data)
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Plan:
    """Cells to run in order, and the ones left out with why."""

    run: list[tuple[int, Cell]]
    """(index of the job in the sweep as given, cell), ordered by server configuration."""
    skipped: list[tuple[int, Cell, str]]


def make_plan(cells: Sequence[Cell]) -> Plan:
    """Drop meaningless and duplicate cells; group the rest by server configuration."""
    seen: dict[str, int] = {}
    run: list[tuple[int, Cell]] = []
    skipped: list[tuple[int, Cell, str]] = []
    for index, cell in enumerate(cells):
        if cell.run_id in seen:
            skipped.append(
                (
                    index,
                    cell,
                    f"same cell as job {seen[cell.run_id]} ({cell.note or 'identical config'})",
                )
            )
            continue
        seen[cell.run_id] = index
        if cell.skip_reason or cell.refuse_reason:
            skipped.append((index, cell, cell.skip_reason or cell.refuse_reason or ""))
        else:
            run.append((index, cell))
    first_seen: dict[str, int] = {}
    for position, (_, cell) in enumerate(run):
        first_seen.setdefault(cell.server_key, position)
    # Baselines first, so that every drafter's outputs can be compared with them as it finishes.
    run.sort(
        key=lambda item: (
            item[1].spec.drafter.kind != "none",
            first_seen[item[1].server_key],
            item[0],
        )
    )
    return Plan(run=run, skipped=skipped)
