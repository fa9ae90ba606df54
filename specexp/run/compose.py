"""The only module that touches Hydra's DictConfig: composed config -> ExperimentSpec.

Every error is a `SpecError` naming the file or the override, the key, and the accepted values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ValidationError

from specexp.spec import paths
from specexp.spec.errors import SpecError
from specexp.spec.options import GROUPS, spec_error, submodel, validate_option, where_set, load_option
from specexp.spec.experiment import (
    ExperimentSpec,
    ModelSpec,
)

TOP_LEVEL_KEYS = ("k", "seed", "gpu_shared", "experiment", "draft_model", "rerun", "baseline", "citations", "figures",
                  "comparisons", "slo")
"""Top-level keys besides the groups. `citations`, `figures` and `comparisons` name published figures
an experiment is compared with (docs/vocabulary.md section 4); the report reads them, not the job."""


@dataclass(frozen=True)
class Composed:
    """One job's configuration: the validated spec, and the resolved config it came from."""

    spec: ExperimentSpec
    config: dict[str, Any]
    """The job's config as plain data, without Hydra's own node (recorded in provenance)."""
    choices: dict[str, Any]
    """The option chosen for each config group (hardware=h200, ...)."""


def spec_of(cfg: DictConfig, overrides: Sequence[str], choices: Mapping[str, Any] | None = None) -> Composed:
    """The one road from Hydra to specexp: a composed config (with its `hydra` node, or with
    `choices` given) -> resolved data -> validated spec. Every entry point goes through here."""
    if choices is None or isinstance(choices, DictConfig):
        raw_choices = OmegaConf.to_container(choices if choices is not None else cfg.hydra.runtime.choices)
        assert isinstance(raw_choices, dict)
        choices = raw_choices
    data = _resolved(cfg)
    return Composed(to_spec(data, choices, overrides), data, dict(choices))


def compose_overrides(overrides: Sequence[str]) -> Composed:
    """Compose `overrides` the way `python -m specexp` does, outside a Hydra app, and validate them."""
    overrides = list(overrides)
    check_overrides(overrides)
    return spec_of(_hydra_compose(overrides), overrides)


def build_spec(overrides: Sequence[str]) -> ExperimentSpec:
    """The validated spec of `overrides`, composed the way `python -m specexp` does."""
    return compose_overrides(overrides).spec


def resolved_config(overrides: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The resolved config and the group choices of `overrides`, not yet validated (for tools
    and tests that look at a config before it becomes a spec)."""
    cfg = _hydra_compose(list(overrides))
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    assert isinstance(choices, dict)
    return _resolved(cfg), choices


def _hydra_compose(overrides: list[str]) -> DictConfig:
    from hydra import compose, initialize_config_dir

    from specexp.run import hydra_store

    hydra_store.register()
    with initialize_config_dir(config_dir=str(paths.conf_dir()), version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=True)


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
    unknown = sorted(set(data) - set(GROUPS) - set(TOP_LEVEL_KEYS))
    if unknown:
        raise SpecError(
            where_set(unknown[0], None, overrides), unknown[0], "unknown key",
            accepted=[*TOP_LEVEL_KEYS, *GROUPS], value=unknown[0],
        )
    parts: dict[str, Any] = {}
    for group, model in GROUPS.items():
        parts[group] = validate_option(model, data.get(group), group, choices.get(group), overrides)
    draft_model = data.get("draft_model") or parts["drafter"].cost.default_draft_model
    if draft_model is not None and parts["drafter"].cost.uses_draft_model:
        parts["draft_model"] = load_option(
            ModelSpec, "model", str(draft_model), "draft_model", where=where_set("draft_model", None, overrides)
        )
    top = {key: data[key] for key in ("seed", "gpu_shared", "experiment", "baseline", "slo") if key in data}
    requested = data.get("k")
    try:
        ExperimentSpec(**parts, **top, k=requested)  # validates k as given
        k = None if parts["drafter"].kind == "none" else (requested or parts["drafter"].default_k)
        spec = ExperimentSpec(**parts, **top, k=k, requested_k=requested, stated=_stated(overrides, top))
    except ValidationError as err:
        raise spec_error(err, None, None, overrides) from None
    _refuse_overrides_that_do_nothing(spec, overrides)
    if spec.workload.search is not None and not spec.slo.active:
        raise SpecError(where_set("workload.search", None, overrides), "workload.search",
                        f"search={spec.workload.search} needs an SLO: set slo.ttft_s, slo.tpot_s or slo.e2e_s")
    from specexp.spec.input_files import check_files  # a trace or dataset file is read before anything runs

    check_files(spec.workload)
    return spec


def _refuse_overrides_that_do_nothing(spec: ExperimentSpec, overrides: Sequence[str]) -> None:
    """An override the workload never reads is an error naming the key that does work."""
    w = spec.workload
    for override in overrides:
        key = override.lstrip("+~").split("=", 1)[0]
        if key == "workload.prompt_tokens" and w.prompt_lengths:
            raise SpecError(f"override {override}", key, f"does nothing: workload {w.name} sends the lengths of "
                            f"workload.prompt_lengths ({w.prompt_lengths}); set workload.prompt_lengths=[N] instead")
        if key in ("workload.prompt_tokens", "workload.prompt_lengths") and w.material == "none":
            raise SpecError(f"override {override}", key, f"does nothing: workload {w.name} sends its instruction "
                            "alone (workload.material: none), at its own length; set workload.material=filler "
                            "(or source_file) to fill prompts to a length")


def _stated(overrides: Sequence[str], top: Mapping[str, Any]) -> tuple[str, ...]:
    """Groups and keys the user set: those of the overrides, and every group an experiment sets."""
    keys = {o.lstrip("+~").split("=", 1)[0] for o in overrides if "=" in o}
    keys |= {key.split(".", 1)[0] for key in keys}
    if top.get("experiment"):
        keys |= set(GROUPS)
    return tuple(sorted(k for k in keys if not k.startswith("hydra")))


def _check_path(model: type[BaseModel], parts: list[str], text: str, key: str) -> None:
    """Every part of a dotted override key must name a field, down to a plain value or a mapping."""
    for part in parts:
        if part not in model.model_fields:
            raise SpecError(f"override {text}", key, "unknown key", accepted=list(model.model_fields), value=part)
        nested = submodel(model, part)
        if nested is None:
            return  # a value or a free-form mapping (peak_tflops, acceptance, ...)
        model = nested


def check_overrides(overrides: Sequence[str]) -> None:
    """Reject unknown config options and keys on the command line before Hydra composes.

    Hydra's own messages for these span several lines and suggest nothing; this names the
    override, the key and the accepted values, with a did-you-mean.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for text in overrides:
        try:
            override = parser.parse_override(text)
        except Exception as err:  # Hydra's grammar errors
            raise SpecError(f"override {text}", text.split("=", 1)[0], f"cannot parse: {err}") from None
        key = override.get_key_element().lstrip("+~")
        if key.startswith("hydra") or override.is_delete():
            continue
        if key in GROUPS or key == "experiment":
            values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [
                override.get_value_element_as_str()
            ]
            for value in values:
                if value not in paths.options(key):
                    raise SpecError(
                        f"override {text}", key, f"no {key} named '{value}'",
                        accepted=paths.options(key), value=value,
                    )
            continue
        head, _, rest = key.partition(".")
        if head in GROUPS:
            _check_path(GROUPS[head], rest.split("."), text, key)
        elif head not in TOP_LEVEL_KEYS:
            raise SpecError(
                f"override {text}", key, "unknown key", accepted=[*TOP_LEVEL_KEYS, *GROUPS], value=key
            )


def validate_single_run(overrides: Sequence[str]) -> None:
    """Compose and validate a single run's config before Hydra creates its run directory, so a
    bad value leaves nothing behind (a sweep's cells are validated by specexp's sweeper)."""
    compose_overrides(overrides)
