"""What specexp registers in Hydra's ConfigStore before Hydra composes anything.

- `hydra/sweeper=specexp` (conf/config.yaml names it): specexp's sweeper (specexp.run.sweeper), found by
  Hydra through hydra_plugins/specexp_sweeper;
- `+experiment=NAME`: `experiments/NAME.yaml` (the top-level folder, or the wheel's copy). Hydra finds
  config groups inside its search path only; the experiments live beside `conf/`, so each file is
  registered under the group `experiment`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from specexp.spec import paths


@dataclass
class SpecexpSweeperConf:
    _target_: str = "hydra_plugins.specexp_sweeper.SpecexpSweeper"
    max_batch_size: int | None = None
    params: dict[str, str] | None = None
    grid: list[dict[str, str]] | None = None
    """A union of grids: each entry is swept as a product, and the entries are concatenated.
    Lets an experiment pair values, e.g. MTP with k=3,8,15 and DSpark with k=7,14."""


_NAMES = re.compile(r"^[+~]*experiment=\[?([^\]]*)\]?$")


def named_experiments(args: Sequence[str]) -> set[str]:
    """The experiments a command line names (`+experiment=a`, `experiment=a,b` in a sweep)."""
    return {n.strip() for a in args if (m := _NAMES.match(a)) for n in m[1].split(",")}


def register(args: Sequence[str] | None = None) -> None:
    """Register the sweeper, and the experiments `args` name (all of them without `args`: each
    is a YAML file to read, and a command line names one at most, as a rule)."""
    store = ConfigStore.instance()
    store.store(group="hydra/sweeper", name="specexp", node=SpecexpSweeperConf, provider="specexp")
    wanted = None if args is None else named_experiments(args)
    for path in sorted(paths.experiments_dir().glob("*.yaml")):
        if wanted is not None and path.stem not in wanted:
            continue
        text = path.read_text(encoding="utf-8")
        package = "_global_" if "# @package _global_" in text else None
        node = OmegaConf.create(text) if text.strip() else OmegaConf.create({})
        store.store(
            group="experiment", name=path.stem, node=node, package=package, provider="specexp"
        )
