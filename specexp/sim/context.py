"""The context a server runs with: native or YaRN-extended, capped by the drafter.

A model serves max_position_embeddings tokens natively, or that times its YaRN factor when
rope scaling is enabled. A drafter without YaRN support cannot follow: with YaRN on, the
server fails at start (docs/studies.md: DSpark raises an AttributeError about
max_position_embeddings); without it, the drafter's own context caps the server's.
"""

from __future__ import annotations

from specexp.measure.events import RuntimeFailure
from specexp.spec.experiment import ExperimentSpec


def model_context(spec: ExperimentSpec) -> int:
    """Tokens the target model can attend to: native, or YaRN-extended."""
    m = spec.model
    return int(m.max_position_embeddings * (m.yarn_factor or 1.0))


def context_limit(spec: ExperimentSpec, k: int) -> tuple[int, str | None] | RuntimeFailure:
    """(max_model_len, what capped it) for this server, or the failure that stops it starting."""
    m, d, rt = spec.model, spec.drafter, spec.runtime
    limit = model_context(spec)
    if rt.max_model_len is not None and rt.max_model_len > limit:
        how = f"YaRN x{m.yarn_factor:g}" if m.yarn_factor else "native, no YaRN"
        return RuntimeFailure(
            "refused",
            "max_model_len_too_large",
            f"max_model_len {rt.max_model_len:,} is greater than model={m.name}'s context {limit:,} ({how})",
        )
    length = rt.max_model_len or limit
    if k <= 0 or d.kind == "none":
        return length, None
    if m.yarn_factor and not d.supports_yarn:
        return RuntimeFailure(
            "refused",
            "drafter_without_yarn",
            f"drafter={d.name} does not support YaRN rope scaling (model.yarn_factor={m.yarn_factor:g}): the server "
            f"fails at start (AttributeError about max_position_embeddings); serve the native "
            f"{m.max_position_embeddings:,} tokens without YaRN instead",
        )
    if d.max_context is not None and length > d.max_context:
        return (
            d.max_context,
            f"context capped at {d.max_context:,} tokens by drafter={d.name} (no YaRN)",
        )
    return length, None
