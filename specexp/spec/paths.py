"""Where the config vocabulary and the experiments are: the clone's, or the wheel's copy."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]


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


def options(group: str) -> list[str]:
    """The option names of a config group (file stems), sorted."""
    folder = experiments_dir() if group == "experiment" else conf_dir() / group
    return sorted(p.stem for p in folder.glob("*.yaml"))
