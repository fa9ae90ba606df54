"""A user name or password in a URL is refused: specexp writes every URL it is given down.

`runtime.url=http://alice:S3CRET@host:8000` would land in result.json (the overrides and the
config of its provenance), in `.hydra/*.yaml`, in the job folder's name and so in the report's
links, and on the terminal. So a URL with user-info is refused where a config becomes a spec, in
one line that names the key and where it was set (an override shown with its password masked);
an API key goes in the environment variable that `runtime.api_key_env` names, never recorded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from specexp.spec import paths
from specexp.spec.errors import SpecError
from specexp.spec.options import GROUPS, where_set
from specexp.spec.redact import USERINFO, redact


def _strings(value: Any, key: str) -> Iterator[tuple[str, str]]:
    """(dotted key, text) of every string in a config, lists and mappings included."""
    if isinstance(value, Mapping):
        for name, item in value.items():
            yield from _strings(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{key}[{index}]")
    elif isinstance(value, str):
        yield key, value


def refuse_credentials(
    data: Mapping[str, Any],
    choices: Mapping[str, Any] | None = None,
    overrides: Sequence[str] = (),
) -> None:
    """Raise a SpecError for the first value of `data` (a resolved config) holding a URL with a
    user name or password; the message masks the password."""
    for key, text in _strings(data, ""):
        if USERINFO.search(text) is None:
            continue
        raise SpecError(
            redact(_where(key, text, choices or {}, overrides)),
            key,
            "a user name or password in a URL would be written into every record, config and "
            "job folder name: give the URL without it, and an API key in the environment "
            "variable that runtime.api_key_env names",
        )


def _where(key: str, text: str, choices: Mapping[str, Any], overrides: Sequence[str]) -> str:
    """The override that set `key`, else the option file that holds `text`, else the config."""
    group = key.split(".", 1)[0].split("[", 1)[0]
    option = choices.get(group) if group in GROUPS else None
    found = paths.option_file(group, str(option)) if option else None
    holds = found is not None and text in found.read_text(encoding="utf-8", errors="replace")
    return where_set(key.split("[", 1)[0], (group, str(option)) if holds else None, overrides)
