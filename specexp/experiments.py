"""`+experiment=NAME` selects `experiments/NAME.yaml` (the top-level folder, or the wheel's copy).

Hydra finds config groups inside its search path only; the experiments live beside `conf/`,
so each file is registered in Hydra's ConfigStore under the group `experiment`.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from specexp import paths


def register() -> None:
    store = ConfigStore.instance()
    for path in sorted(paths.experiments_dir().glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        package = "_global_" if "# @package _global_" in text else None
        node = OmegaConf.create(text) if text.strip() else OmegaConf.create({})
        store.store(group="experiment", name=path.stem, node=node, package=package, provider="specexp")
