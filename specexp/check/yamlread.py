"""YAML in, with one-line errors: a SafeLoader that also refuses a key written twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from specexp.spec.errors import SpecError


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key written twice in one mapping (ids must be unique)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            continue  # unhashable: SafeLoader reports it
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} written twice", key_node.start_mark
            )
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; any problem is a one-line SpecError naming it."""
    where = str(path)
    try:
        text = path.read_bytes().decode("utf-8")
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except OSError as err:
        raise SpecError(where, "file", f"cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise SpecError(where, "file", "not UTF-8 text") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SpecError(
            where, "yaml", f"{_one_line(err.problem or err.context or 'invalid YAML')}{at}"
        ) from None
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as err:
        raise SpecError(
            where, "yaml", f"invalid YAML: {_one_line(str(err)) or type(err).__name__}"
        ) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())
