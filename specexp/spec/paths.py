"""Where the config vocabulary and the experiments are: the clone's, or the wheel's copy, and
the user's own config directories (`--config-dir DIR`, `hydra.searchpath=[file://DIR]`).

A user directory has the layout of `conf/` (`DIR/hardware/my-gpu.yaml`, `DIR/model/...`): its
options are found, listed, validated and suggested beside the shipped ones. Hydra searches
`conf/` first, so a user option named like a shipped one is never composed: give yours its own
name (specexp searches in the same order).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
_user_dirs: tuple[Path, ...] = ()

GROUP_NAMES = ("hardware", "model", "quantization", "runtime", "drafter", "workload")
"""The config groups a job composes, one folder of conf/ each (specexp.spec.options.GROUPS has
each one's spec; a name alone is enough to check an option, before any spec is imported)."""


def _find(name: str) -> Path:
    clone = _PACKAGE.parent / name
    if clone.is_dir():
        return clone
    return _PACKAGE / "_data" / name


def conf_dir() -> Path:
    """The `conf/` folder: one Hydra group per axis, one option per file."""
    return _find("conf")


def experiments_dir() -> Path:
    """The `experiments/` folder, selected with `+experiment=NAME`."""
    return _find("experiments")


def templates_dir() -> Path:
    """Jinja2 templates of the reports (`templates/`)."""
    return _find("templates")


def set_user_dirs(dirs: Sequence[str | Path]) -> None:
    """The user's config directories (the command line's), searched after `conf/`."""
    global _user_dirs
    _user_dirs = tuple(Path(d).expanduser().resolve() for d in dirs)


def user_dirs() -> tuple[Path, ...]:
    return _user_dirs


def config_dirs() -> tuple[Path, ...]:
    """Every directory options are searched in, first match wins: `conf/`, then the user's (the
    order of Hydra's search path: its primary config directory, then `hydra.searchpath`)."""
    return (conf_dir(), *_user_dirs)


def option_file(group: str, name: str) -> Path | None:
    """The file of option `name` of `group` (`hardware`, ...), or None where no directory has it."""
    folders = (
        [experiments_dir(), *(d / "experiment" for d in _user_dirs)]
        if group == "experiment"
        else [d / group for d in config_dirs()]
    )
    return next((f / f"{name}.yaml" for f in folders if (f / f"{name}.yaml").is_file()), None)


def options(group: str) -> list[str]:
    """The option names of a config group (file stems) in every directory searched, sorted."""
    if group == "experiment":
        folders = [experiments_dir(), *(d / "experiment" for d in _user_dirs)]
    else:
        folders = [d / group for d in config_dirs()]
    return sorted({p.stem for folder in folders for p in folder.glob("*.yaml")})


_SEARCHPATH = re.compile(r"^\+{0,2}hydra\.searchpath=\[?(.*?)\]?$")


def user_dirs_of(args: Sequence[str]) -> list[str]:
    """The config directories a command line names: `--config-dir DIR` (`-cd DIR`,
    `--config-dir=DIR`) and `hydra.searchpath=[file://DIR,...]` (pkg:// entries are Python
    packages: not directories of this machine, and left to Hydra)."""
    return [folder for _, folder in user_dirs_named(args)]


def user_dirs_named(args: Sequence[str]) -> list[tuple[str, str]]:
    """Each config directory a command line names, with the flag or override that names it."""
    found: list[tuple[str, str]] = []
    for i, arg in enumerate(args):
        if arg in ("--config-dir", "-cd") and i + 1 < len(args):
            found.append((arg, args[i + 1]))
        elif arg.startswith("--config-dir="):
            found.append(("--config-dir", arg.split("=", 1)[1]))
        elif match := _SEARCHPATH.match(arg):
            for entry in match.group(1).split(","):
                entry = entry.strip().strip("'\"")
                if entry.startswith("file://"):
                    found.append(("hydra.searchpath", entry[len("file://") :]))
    return found
