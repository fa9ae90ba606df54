"""specexp's Hydra callbacks (conf/config.yaml lists them under `hydra.callbacks`).

A plain job that goes through Hydra (one with a Hydra flag, such as `--config-dir`) has its
`.hydra/*.yaml` written by Hydra before specexp's task function sees its config; a refusal that
must come before anything is written is made here, when Hydra's run starts.
"""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from specexp.spec.credentials import refuse_credentials
from specexp.spec.errors import SpecError, exit_on_spec_error


class RefuseCredentials(Callback):
    """A URL with a user name or password (specexp.spec.credentials) is refused before Hydra
    writes the job's config, which would hold it."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        data = OmegaConf.to_container(config, resolve=False)  # what Hydra is about to write
        assert isinstance(data, dict)
        hydra_node = data.pop("hydra", None) or {}
        overrides = [str(o) for o in (hydra_node.get("overrides") or {}).get("task") or []]
        choices = (hydra_node.get("runtime") or {}).get("choices") or {}
        try:
            refuse_credentials({str(k): v for k, v in data.items()}, choices, overrides)
        except SpecError as err:
            exit_on_spec_error(err)
