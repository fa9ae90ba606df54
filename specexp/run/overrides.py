"""The command line's overrides, checked before Hydra composes them: an unknown option or key,
a `+` on a group the defaults choose already, a comma list outside a sweep.

Hydra's own answers to these are tracebacks or several lines that suggest nothing; each here is a
`SpecError` naming the override, the key and what to write instead.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Sequence

from specexp.spec import paths
from specexp.spec.errors import Mistakes, SpecError
from specexp.spec.paths import GROUP_NAMES

if typing.TYPE_CHECKING:
    from pydantic import BaseModel

TOP_LEVEL_KEYS = (
    "k",
    "seed",
    "gpu_shared",
    "experiment",
    "draft_model",
    "rerun",
    "baseline",
    "citations",
    "figures",
    "comparisons",
    "slo",
)
"""Top-level keys besides the groups. `citations`, `figures` and `comparisons` name published figures
an experiment is compared with (docs/vocabulary.md section 4); the report reads them, not the job."""


def _check_path(model: type[BaseModel], parts: list[str], text: str, key: str) -> None:
    """Every part of a dotted override key must name a field, down to a plain value or a mapping.
    (A runtime's key is checked against every runtime's here, and against the chosen runtime's
    own when the spec is made.)"""
    from specexp.spec.options import submodel
    from specexp.spec.runtime import EVERY_KEY, RuntimeSpec

    if model is RuntimeSpec:
        if parts[0] not in EVERY_KEY:
            raise SpecError(
                f"override {text}",
                key,
                "no runtime has this key",
                accepted=list(EVERY_KEY),
                value=parts[0],
            )
        return
    for part in parts:
        if part not in model.model_fields:
            raise SpecError(
                f"override {text}",
                key,
                "unknown key",
                accepted=list(model.model_fields),
                value=part,
            )
        nested = submodel(model, part)
        if nested is None:
            return  # a value or a free-form mapping (peak_tflops, acceptance, ...)
        model = nested


def check_overrides(overrides: Sequence[str]) -> None:
    """Reject unknown config options and keys on the command line before Hydra composes.

    Hydra's own messages for these span several lines and suggest nothing; this names the
    override, the key and the accepted values, with a did-you-mean: every mistaken override at
    once, a line each.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    mistakes = Mistakes()
    for text in overrides:
        with mistakes.noted():
            _check_override(parser, text)
    mistakes.raise_any()


def _check_override(parser: typing.Any, text: str) -> None:
    """One override: SpecError naming what is wrong with it."""
    try:
        override = parser.parse_override(text)
    except Exception as err:  # Hydra's grammar errors
        raise SpecError(f"override {text}", text.split("=", 1)[0], f"cannot parse: {err}") from None
    key = override.get_key_element().lstrip("+~")
    if key.startswith("hydra") or override.is_delete():
        return
    if key in GROUP_NAMES and override.get_key_element().startswith("+"):
        plain = text.lstrip("+")
        raise SpecError(
            f"override {text}",
            key,
            f"the defaults choose a {key} already, and a chosen group is overridden "
            f"without +: write {plain}",
        )
    if key in GROUP_NAMES or key == "experiment":
        values = (
            list(override.sweep_string_iterator())
            if override.is_sweep_override()
            else [override.get_value_element_as_str()]
        )
        for value in values:
            if value not in paths.options(key):
                raise SpecError(
                    f"override {text}",
                    key,
                    f"no {key} named '{value}'",
                    accepted=paths.options(key),
                    value=value,
                )
        return
    head, _, rest = key.partition(".")
    if head in GROUP_NAMES:
        from specexp.spec.options import GROUPS  # the specs: only for a key inside a group

        _check_path(GROUPS[head], rest.split("."), text, key)
    elif head not in TOP_LEVEL_KEYS:
        raise SpecError(
            f"override {text}",
            key,
            "unknown key",
            accepted=[*TOP_LEVEL_KEYS, *GROUP_NAMES],
            value=head,
        )


def check_single(overrides: Sequence[str], args: Sequence[str]) -> None:
    """Refuse a comma list of a run that is not a sweep (`drafter=mtp,dspark` without `-m`):
    Hydra's answer is a traceback; this says what to type instead (`args`: the command line)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for text in overrides:
        override = parser.parse_override(text)
        if not override.is_sweep_override():
            continue
        key = override.get_key_element().lstrip("+~")
        as_sweep = [a.replace("hydra.run.dir=", "hydra.sweep.dir=", 1) for a in args]
        sweep = " ".join(["python -m specexp -m", *as_sweep])
        values = text.split("=", 1)[1]
        listed = f", or write {key}=[{values}] for one list" if _takes_a_list(key) else ""
        raise SpecError(
            f"override {text}",
            key,
            f"a comma list is a sweep, which needs -m (--multirun): {sweep}{listed}",
        )


def _takes_a_list(key: str) -> bool:
    """Whether the dotted `key` of a group names a list (`workload.concurrency`)."""
    from specexp.spec.options import GROUPS, model_at

    head, _, rest = key.partition(".")
    if head not in GROUPS or not rest:
        return False
    *parents, name = rest.split(".")
    field = model_at(GROUPS[head], parents).model_fields.get(name)
    annotation = field.annotation if field is not None else None
    return any(typing.get_origin(a) is list for a in (annotation, *typing.get_args(annotation)))


def composition_error(err: Exception, overrides: Sequence[str]) -> SpecError:
    """Hydra's refusal of an override as one line: most often a key the spec knows but the chosen
    option's file does not set, which Hydra adds only when written with a leading +."""
    text, match = str(err), re.match(r"Could not override '([^']+)'", str(err))
    if match is None or "+" + match.group(1) not in text:
        return SpecError("overrides", "", " ".join(text.split()))
    key = match.group(1)
    written = next((o for o in overrides if o.split("=", 1)[0] == key), key)
    group, rest = key.split(".", 1) if "." in key else (key, key)
    return SpecError(
        f"override {written}",
        key,
        f"the chosen {group} file does not set {rest}: add it with a leading +, as +{written}",
    )
