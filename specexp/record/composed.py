"""The job's composed configuration as a record holds it (`Provenance.config`), read through one
typed model.

The record keeps the configuration exactly as the job resolved it, every key in Hydra's order, so
a record written by an older specexp reads back whatever its keys were. Readers go through
`ComposedConfig` instead of indexing the dict by strings: the keys a report, a check or a refit
reads are typed fields here, and every other key is kept as it was (`extra="allow"`). A value of
the wrong type in a committed record is read as absent, never as an error: a record is evidence,
and its figures stay readable when one of its descriptions is odd.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator


class _Node(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _absent_when_odd(cls, value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            return None


class OptionNode(_Node):
    """One config group's option (hardware, model, quantization, drafter ...) as composed."""

    name: str | None = None
    description: str | None = None
    hf_id: str | None = None


class SessionNode(_Node):
    turn_material: str | None = None


class WorkloadNode(OptionNode):
    material: str | None = None
    dataset_file: str | None = None
    session: SessionNode | None = None
    acceptance_class: str | None = None
    shared_prefix: bool | None = None
    endpoint: str | None = None
    prompt: str | None = None
    prompt_tokens: int | None = None
    prompt_lengths: list[int] | None = None
    trace_file: str | None = None


class RuntimeNode(OptionNode):
    load_format: str | None = None
    extra_args: list[Any] | None = None


class SloNode(_Node):
    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None
    percentile: float | None = None

    @property
    def active(self) -> bool:
        """Whether any objective is set (the percentile alone sets none)."""
        return any(v is not None for v in (self.ttft_s, self.tpot_s, self.e2e_s))


class ComposedConfig(_Node):
    """The composed configuration's keys that specexp reads back, typed."""

    hardware: OptionNode | None = None
    model: OptionNode | None = None
    quantization: OptionNode | None = None
    runtime: RuntimeNode | None = None
    drafter: OptionNode | None = None
    workload: WorkloadNode | None = None
    experiment: str | None = None
    slo: SloNode | None = None

    def option(self, group: str) -> OptionNode:
        """The option of config `group`; an empty one where the record has none."""
        node = getattr(self, group, None) if group in type(self).model_fields else None
        if node is None:
            raw = (self.model_extra or {}).get(group)
            node = OptionNode.model_validate(raw) if isinstance(raw, dict) else OptionNode()
        return node if isinstance(node, OptionNode) else OptionNode()


def composed(config: dict[str, Any]) -> ComposedConfig:
    """The typed view of a record's `config`."""
    return ComposedConfig.model_validate(config)
