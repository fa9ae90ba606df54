"""The only module that touches Hydra's DictConfig: composed config -> ExperimentSpec.

Every error is a `SpecError` naming the file or the override, the key, and the accepted values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import ValidationError

from specexp.run.overrides import TOP_LEVEL_KEYS, check_overrides, composition_error
from specexp.spec import paths
from specexp.spec.credentials import refuse_credentials
from specexp.spec.errors import SpecError
from specexp.spec.experiment import ExperimentSpec, ModelSpec
from specexp.spec.options import (
    GROUPS,
    load_option,
    spec_error,
    validate_option,
    where_set,
)


@dataclass(frozen=True)
class Composed:
    """One job's configuration: the validated spec, and the resolved config it came from."""

    spec: ExperimentSpec
    config: dict[str, Any]
    """The job's config as plain data, without Hydra's own node (recorded in provenance)."""
    choices: dict[str, Any]
    """The option chosen for each config group (hardware=h200, ...)."""


def spec_of(
    cfg: DictConfig, overrides: Sequence[str], choices: Mapping[str, Any] | None = None
) -> Composed:
    """The one road from Hydra to specexp: a composed config (with its `hydra` node, or with
    `choices` given) -> resolved data -> validated spec. Every entry point goes through here."""
    if choices is None or isinstance(choices, DictConfig):
        choices = _mapping(choices if choices is not None else cfg.hydra.runtime.choices)
    data = _resolved(cfg)
    return Composed(to_spec(data, choices, overrides), data, dict(choices))


def _mapping(node: Any, resolve: bool = False) -> dict[str, Any]:
    """An OmegaConf mapping node as plain data with string keys."""
    data = OmegaConf.to_container(node, resolve=resolve)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


class SweepComposer:
    """Every cell of a sweep composed once, and Hydra composing only what differs between cells.

    Hydra composes a config in two steps: the defaults list (the group choices: `hardware=h200`,
    `+experiment=...`) gives the config, then the value overrides (`k=8`,
    `workload.output_tokens=64`) are applied to it. A sweep's cells share few group choices, so
    the first step runs once per distinct set of them (the costly one: it reads every file of the
    defaults tree) and the second, Hydra's own code, on a copy for each cell.
    """

    def __init__(self, loader: Any, master: DictConfig) -> None:
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.loader, self.master = loader, master
        self.parser = OverridesParser.create(config_loader=loader)
        _share_file_cache(loader)
        self._by_choices: dict[tuple[str, ...], tuple[dict[str, Any], dict[str, Any]]] = {}
        self._cells: dict[tuple[tuple[str, ...], tuple[str, ...]], Composed] = {}

    def compose(self, overrides: Sequence[str]) -> Composed:
        parsed = self.parser.parse_overrides(list(overrides))
        picks = {
            o.get_key_element().lstrip("+~"): str(o.input_line)
            for o in parsed
            if _chooses_option(o)
        }
        choices = tuple(
            line for _, line in sorted(picks.items())
        )  # one group's last pick counts, as in Hydra
        values = [o for o in parsed if not _chooses_option(o)]
        key = (choices, tuple(str(o.input_line) for o in values))
        if key not in self._cells:
            cfg, picked = self.config(choices, values)
            self._cells[key] = Composed(to_spec(cfg, picked, overrides), cfg, picked)
        return self._cells[key]

    def config(
        self, choices: tuple[str, ...], values: list[Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The resolved config of group `choices` and parsed `values` overrides (without Hydra's own
        node, which a job's config never reads), as Hydra's `load_sweep_config` composes it, and the
        option chosen for each group."""
        import copy

        from hydra._internal.config_loader_impl import ConfigLoaderImpl

        if choices not in self._by_choices:
            self._by_choices[choices] = self.task_config(list(choices))
        task, picked = self._by_choices[choices]
        if _interpolates(task):  # a value may point anywhere: the whole config takes the overrides
            touched = set(task)
        else:  # only the parts an override names are rebuilt (a config is a few hundred nodes a group)
            touched = {o.get_key_element().lstrip("+~").split(".", 1)[0] for o in values}
        part = OmegaConf.create({key: task[key] for key in touched if key in task})
        OmegaConf.set_struct(part, True)  # as Hydra applies overrides: a new key needs its `+`
        ConfigLoaderImpl._apply_overrides_to_config(values, part)
        changed = _mapping(part, resolve=True)
        data = {key: copy.deepcopy(value) for key, value in task.items() if key not in touched}
        data.update(changed)
        data = {
            key: data[key] for key in [*task, *(k for k in data if k not in task)] if key in data
        }
        return {str(k): v for k, v in data.items()}, dict(picked)

    def task_config(self, choices: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The config of group `choices` without Hydra's own node, and the option chosen for each
        group: what Hydra's `load_sweep_config` composes less its `hydra` node, for a third of the
        time. Its defaults list is Hydra's (with Hydra's own config in it, which the primary config
        overrides), and only the entries of the task's packages are merged: Hydra's node, some
        hundreds of values of help text and logging, is the larger part of every merge and is
        dropped anyway (tests/unit/test_compose.py holds the two equal)."""
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra._internal.defaults_list import create_defaults_list

        hydra_overrides = OmegaConf.to_container(self.master.hydra.overrides.hydra)
        assert isinstance(hydra_overrides, list)
        config_name = self.master.hydra.job.config_name
        parsed, repo = self.loader._parse_overrides_and_create_caching_repo(
            config_name, [*hydra_overrides, *choices]
        )
        listed = create_defaults_list(
            repo=repo,
            config_name=config_name,
            overrides_list=parsed,
            prepend_hydra=True,
            skip_missing=False,
        )
        ours = [d for d in listed.defaults if not (d.package or "").split(".")[0] == "hydra"]
        cfg = self.loader._compose_config_from_defaults_list(defaults=ours, repo=repo)
        OmegaConf.set_struct(cfg, True)
        values = [o for o in listed.config_overrides if not o.is_hydra_override()]
        ConfigLoaderImpl._apply_overrides_to_config(values, cfg)
        task = OmegaConf.to_container(cfg, resolve=False)
        assert isinstance(task, dict)
        task.pop("hydra", None)  # the primary config's and an experiment's settings of Hydra
        return {str(k): v for k, v in task.items()}, dict(listed.overrides.known_choices)


def _interpolates(value: Any) -> bool:
    """Whether a config holds an interpolation (`${...}`) anywhere."""
    if isinstance(value, dict):
        return any(_interpolates(v) for v in value.values())
    if isinstance(value, list):
        return any(_interpolates(v) for v in value)
    return isinstance(value, str) and "${" in value


def _share_file_cache(loader: Any) -> None:
    """One cache of the config files Hydra reads, for every composition of the sweep.

    Hydra caches each file it reads for the length of one composition (its CachingConfigRepository,
    made from a deep copy of the loader's repository) and reads them all again for the next. A
    sweep's files and search path do not change while it plans, so its compositions share the first
    one's repository; a composition that sets its own search path gets its own, as in Hydra."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    create = loader._parse_overrides_and_create_caching_repo
    shared: list[Any] = []

    def parse_and_reuse(config_name: Any, overrides: list[str]) -> Any:
        if shared and not any(o.lstrip("+~").startswith("hydra.searchpath") for o in overrides):
            return OverridesParser.create().parse_overrides(overrides=overrides), shared[0]
        parsed, repo = create(config_name, overrides)
        if not shared:
            shared.append(repo)
        return parsed, repo

    loader._parse_overrides_and_create_caching_repo = parse_and_reuse


def _chooses_option(override: Any) -> bool:
    """Whether a parsed override picks a group's option (Hydra's defaults list) rather than a value."""
    key = override.get_key_element().lstrip("+~")
    return (key in GROUPS or key == "experiment" or "/" in key) and not isinstance(
        override.value(), dict
    )


def compose_overrides(overrides: Sequence[str]) -> Composed:
    """Compose `overrides` the way `python -m specexp` does, outside a Hydra app, and validate them."""
    overrides = list(overrides)
    check_overrides(overrides)
    return spec_of(_hydra_compose(overrides), overrides)


def compose_run(overrides: Sequence[str]) -> tuple[Composed, Path]:
    """A plain run's one composition: its validated spec and its run directory (hydra.run.dir,
    not yet created: a config that fails validation leaves nothing behind)."""
    overrides = list(overrides)
    check_overrides(overrides)
    cfg = _hydra_compose(overrides)
    return spec_of(cfg, overrides), Path(str(cfg.hydra.run.dir)).absolute()


def build_spec(overrides: Sequence[str]) -> ExperimentSpec:
    """The validated spec of `overrides`, composed the way `python -m specexp` does."""
    return compose_overrides(overrides).spec


def resolved_config(overrides: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The resolved config and the group choices of `overrides`, not yet validated (for tools
    and tests that look at a config before it becomes a spec)."""
    cfg = _hydra_compose(list(overrides))
    return _resolved(cfg), _mapping(cfg.hydra.runtime.choices)


def _hydra_compose(overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir

    from specexp.run import hydra_store

    hydra_store.register(overrides)
    if paths.user_dirs() and not any(
        o.lstrip("+").startswith("hydra.searchpath=") for o in overrides
    ):
        # the user's --config-dir: Hydra's search path, as the command line gave it to the app
        entries = ",".join(f"file://{d}" for d in paths.user_dirs())
        overrides = [*overrides, f"hydra.searchpath=[{entries}]"]
    from hydra.errors import ConfigCompositionException

    with initialize_config_dir(config_dir=str(paths.conf_dir()), version_base="1.3"):
        try:
            return compose("config", overrides=overrides, return_hydra_config=True)
        except ConfigCompositionException as err:
            raise composition_error(err, overrides) from None


def _resolved(cfg: DictConfig) -> dict[str, Any]:
    raw = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(raw, dict)
    raw.pop("hydra", None)
    data = OmegaConf.to_container(OmegaConf.create(raw), resolve=True)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items()}


def to_spec(
    data: Mapping[str, Any],
    choices: Mapping[str, str | None],
    overrides: Sequence[str] = (),
) -> ExperimentSpec:
    """Validate a resolved config into an ExperimentSpec, with `k` resolved: None without a
    drafter, else the given k or the drafter's default (`requested_k` keeps what was given)."""
    refuse_credentials(data, choices, overrides)  # before any message could show a password
    unknown = sorted(set(data) - set(GROUPS) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise SpecError(
            where_set(unknown[0], None, overrides),
            unknown[0],
            "unknown key",
            accepted=[*TOP_LEVEL_KEYS, *GROUPS],
            value=unknown[0],
        )
    parts: dict[str, Any] = {}
    for group, model in GROUPS.items():
        parts[group] = validate_option(model, data.get(group), group, choices.get(group), overrides)
    named = data.get("draft_model") or parts["model"].draft_model  # the user's, else the model's
    draft_model = named or parts["drafter"].cost.default_draft_model
    if draft_model is not None and parts["drafter"].cost.uses_draft_model:
        parts["draft_model"] = load_option(
            ModelSpec,
            "model",
            str(draft_model),
            "draft_model",
            where=where_set("draft_model", None, overrides),
        )
    top = {
        key: data[key]
        for key in ("seed", "gpu_shared", "experiment", "baseline", "slo")
        if key in data
    }
    requested = data.get("k")
    try:
        ExperimentSpec(**parts, **top, k=requested)  # validates k as given
        k = None if parts["drafter"].kind == "none" else (requested or parts["drafter"].default_k)
        spec = ExperimentSpec(
            **parts, **top, k=k, requested_k=requested, stated=_stated(overrides, top)
        )
    except ValidationError as err:
        raise spec_error(err, None, None, overrides) from None
    _refuse_overrides_that_do_nothing(spec, overrides)
    if spec.workload.search is not None and not spec.slo.active:
        raise SpecError(
            where_set("workload.search", None, overrides),
            "workload.search",
            f"search={spec.workload.search} needs an SLO: set slo.ttft_s, slo.tpot_s or slo.e2e_s",
        )
    if spec.workload.server_starts > 1 and getattr(spec.runtime, "url", None):
        raise SpecError(
            where_set("workload.server_starts", None, overrides),
            "workload.server_starts",
            f"{spec.workload.server_starts} fresh starts of a server specexp does not start "
            "(runtime.url): it cannot restart it; accepted: 1 with runtime.url",
        )
    _refuse_unsplittable(spec, overrides)
    from specexp.spec.input_files import check_files  # trace and dataset files: read first

    check_files(spec.workload)
    return spec


def _refuse_unsplittable(spec: ExperimentSpec, overrides: Sequence[str]) -> None:
    """runtime.tensor_parallel > 1 where it cannot be: an engine that does not split a model, fewer
    GPUs than it asks, or no interconnect to price the all-reduces on."""
    tp, rt, hw = spec.runtime.tensor_parallel, spec.runtime, spec.hardware
    if tp < 2:
        return
    where = where_set("runtime.tensor_parallel", None, overrides)
    if not rt.simulated and rt.tensor_parallel_flag is None:
        raise SpecError(
            where,
            "runtime.tensor_parallel",
            f"{tp}: runtime={rt.name} does not split a model over GPUs; accepted: 1 "
            "(vllm, sglang and sim accept more)",
        )
    if hw.gpu_count < tp:
        raise SpecError(
            where,
            "runtime.tensor_parallel",
            f"{tp} GPUs asked, hardware={hw.name} has hardware.gpu_count {hw.gpu_count}; accepted: "
            f"1 to {max(hw.gpu_count, 1)}, or set hardware.gpu_count={tp}",
        )
    if hw.interconnect is None:
        raise SpecError(
            where,
            "runtime.tensor_parallel",
            f"{tp}: hardware={hw.name} names no interconnect between its GPUs "
            "(hardware.interconnect); accepted: 1",
        )


def _refuse_overrides_that_do_nothing(spec: ExperimentSpec, overrides: Sequence[str]) -> None:
    """An override the job never reads is an error naming the key that does work."""
    w, hw = spec.workload, spec.hardware.name
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        cost, own = key.removeprefix("drafter.cost."), spec.drafter.cost.devices.get(hw)
        if cost != key and own is not None and getattr(own, cost, None) is not None:
            raise SpecError(
                f"override {override}",
                key,
                f"does nothing on hardware={hw}, whose own fitted value the drafter file gives; "
                f"set drafter.cost.devices.{hw}.{cost} instead",
            )
        if key == "workload.prompt_tokens" and w.prompt_lengths:
            raise SpecError(
                f"override {override}",
                key,
                f"does nothing: workload {w.name} sends the lengths of "
                f"workload.prompt_lengths ({w.prompt_lengths}); set workload.prompt_lengths=[N] instead",
            )
        if key in ("workload.prompt_tokens", "workload.prompt_lengths") and w.material == "none":
            raise SpecError(
                f"override {override}",
                key,
                f"does nothing: workload {w.name} sends its instruction "
                "alone (workload.material: none), at its own length; set ++workload.material=prose "
                "(or source_file) to fill prompts to a length",
            )


def _stated(overrides: Sequence[str], top: Mapping[str, Any]) -> tuple[str, ...]:
    """Groups and keys the user set: those of the overrides, and every group an experiment sets."""
    keys = {o.lstrip("+~").split("=", 1)[0] for o in overrides if "=" in o}
    keys |= {key.split(".", 1)[0] for key in keys}
    if top.get("experiment"):
        keys |= set(GROUPS)
    return tuple(sorted(k for k in keys if not k.startswith("hydra")))
