"""Loading and validating config files and values into specs, with one-line errors.

Every error is a `SpecError` naming the file or the override, the key, and the accepted values.
What needs only the files of conf/ and the spec types lives here (the simulator's engine profiles
and the checker's hardware are read with it); composing a whole config with Hydra is
specexp.run.compose's.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from pydantic import BaseModel, ValidationError

from specexp.spec import paths
from specexp.spec.errors import SpecError, all_of, did_you_mean
from specexp.spec.experiment import (
    DrafterSpec,
    ExperimentSpec,
    ModelSpec,
    QuantizationSpec,
    RuntimeSpec,
    WorkloadSpec,
)
from specexp.spec.hardware import HardwareSpec
from specexp.spec.runtime import RUNTIMES, settings_for

GROUPS: dict[str, type[BaseModel]] = {
    "hardware": HardwareSpec,
    "model": ModelSpec,
    "quantization": QuantizationSpec,
    "runtime": RuntimeSpec,
    "drafter": DrafterSpec,
    "workload": WorkloadSpec,
}
"""Each config group and the spec its option files are validated into."""
assert tuple(GROUPS) == paths.GROUP_NAMES, "the groups of paths.GROUP_NAMES, each with its spec"


def load_option(
    model: type[BaseModel], group: str, name: str, key: str, where: str = "config"
) -> Any:
    """Load and validate one option file of a group, e.g. a draft model from conf/model/."""
    path = paths.option_file(group, name)
    if path is None:
        raise SpecError(
            where, key, f"no {group} named '{name}'", accepted=paths.options(group), value=name
        )
    return _load_file(model, group, name, path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _load_file(model: type[BaseModel], group: str, name: str, path: Path, mtime_ns: int) -> Any:
    """One option file validated (frozen, so shared): read again only when the file changed."""
    data = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    return validate_option(model, data, group, name, ())


def validate_option(
    model: type[BaseModel], data: Any, group: str, choice: str | None, overrides: Sequence[str]
) -> Any:
    if not isinstance(data, Mapping):
        raise SpecError(
            f"conf/{group}", group, "missing or not a mapping", accepted=paths.options(group)
        )
    if model is ModelSpec and data.get("from_config"):  # model=hf: the fields of a config.json
        from specexp.spec.model_config import from_config_json

        data = from_config_json(data, where_set("model", (group, choice), overrides))
    if model is RuntimeSpec:  # one settings model per runtime, chosen by its name
        chosen = settings_for(data.get("name"))
        if chosen is None:
            raise SpecError(
                where_set("runtime.name", (group, choice), overrides),
                "runtime.name",
                f"no runtime named {data.get('name')!r}",
                accepted=list(RUNTIMES),
                value=data.get("name"),
            )
        model = chosen
    try:
        return model.model_validate(dict(data))
    except ValidationError as err:
        raise spec_error(err, group, choice, overrides, model) from None


def spec_error(
    err: ValidationError,
    group: str | None,
    choice: str | None,
    overrides: Sequence[str],
    model: type[BaseModel] | None = None,
) -> SpecError:
    """Every mistake of a validation, one line each: a field's several complaints (one per branch
    of a union, one per item of a list) are one mistake, and a required key that an unknown key's
    did-you-mean names is that unknown key's mistake, not a second one."""
    root = model or GROUPS.get(group or "", ExperimentSpec)
    details = err.errors()
    misspelled = _misspelled_required(details, root)
    found: dict[tuple[str, ...], SpecError] = {}
    for detail in details:
        loc = [str(part) for part in detail["loc"]]
        if detail["type"] == "missing" and tuple(loc) in misspelled:
            continue
        field = _field_path(root, loc, detail["type"])
        found.setdefault(field, _one_error(detail, loc, group, choice, overrides, root))
    return all_of(list(found.values()))


def _one_error(
    detail: Any,
    loc: list[str],
    group: str | None,
    choice: str | None,
    overrides: Sequence[str],
    root: type[BaseModel],
) -> SpecError:
    key = ".".join([group, *loc] if group else loc)
    where = where_set(key, (group, choice) if group else None, overrides)
    kind = detail["type"]
    value = detail.get("input")
    if kind == "extra_forbidden":
        inner = model_at(root, loc[:-1])
        what = (
            f"not a key of runtime={inner.model_fields['name'].default}"
            if inner in RUNTIMES.values()
            else "unknown key"
        )
        return SpecError(where, key, what, accepted=list(inner.model_fields), value=loc[-1])
    if kind == "missing":
        return SpecError(where, key, "required key is missing")
    if kind == "list_type":
        return SpecError(where, key, f"expected a list (got {value!r}); write it as [{value}]")
    if (
        kind == "value_error"
    ):  # a validator's own sentence: it names the keys; the input is not repeated
        return SpecError(where, key, detail["msg"].removeprefix("Value error, "))
    accepted = None
    expected = (detail.get("ctx") or {}).get("expected")
    if expected:
        accepted = [a.strip(" '") for a in str(expected).replace(" or ", ",").split(",")]
    return SpecError(
        where, key, f"{detail['msg'].lower()} (got {value!r})", accepted=accepted, value=value
    )


def _misspelled_required(details: Sequence[Any], root: type[BaseModel]) -> set[tuple[str, ...]]:
    """The missing keys that an unknown key beside them is a misspelling of
    (`memory_bandwith_gbps` written, `memory_bandwidth_gbps` missing)."""
    missing = {tuple(str(p) for p in d["loc"]) for d in details if d["type"] == "missing"}
    meant = set()
    for detail in details:
        if detail["type"] != "extra_forbidden":
            continue
        *parent, written = [str(part) for part in detail["loc"]]
        guess = did_you_mean(written, model_at(root, parent).model_fields)
        if guess is not None and (*parent, guess) in missing:
            meant.add((*parent, guess))
    return meant


def _field_path(root: type[BaseModel], loc: list[str], kind: str) -> tuple[str, ...]:
    """The keys of `loc` that name fields, down to the first that holds a plain value: what one
    mistake is about (an unknown key is its own)."""
    model: type[BaseModel] | None = root
    path: list[str] = []
    for i, part in enumerate(loc):
        last_unknown = kind == "extra_forbidden" and i == len(loc) - 1
        if model is None or (part not in model.model_fields and not last_unknown):
            break
        path.append(part)
        model = submodel(model, part) if not last_unknown else None
    return tuple(path)


def model_at(model: type[BaseModel], loc: list[str]) -> type[BaseModel]:
    """The spec model a dotted location points into, looking through `X | None` fields."""
    for part in loc:
        nested = submodel(model, part)
        if nested is None:
            break
        model = nested
    return model


def submodel(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    field = model.model_fields.get(name)
    annotation = getattr(field, "annotation", None)
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def where_set(
    key: str, file: tuple[str | None, str | None] | None, overrides: Sequence[str]
) -> str:
    """The most specific override that set `key`, else the file it came from."""
    matches = []
    for override in overrides:
        name = override.lstrip("+~").split("=", 1)[0]
        if file and file[0] == name and key != name:
            continue  # `drafter=mtp` chose the file; the mistake is inside conf/drafter/mtp.yaml
        if name == key or key.startswith(name + "."):
            matches.append((len(name), override))
    if matches:
        return f"override {max(matches)[1]}"
    if file and file[0]:
        found = paths.option_file(file[0], file[1]) if file[1] else None
        if found is not None and found.parent.parent != paths.conf_dir():
            return str(found)  # a user's config directory: its own path
        return f"conf/{file[0]}/{file[1]}.yaml"
    return "config"
