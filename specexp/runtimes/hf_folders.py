"""The Hugging Face model folders specexp writes for the engines that load one (vLLM, SGLang): a
generated tiny model with its weights (specexp.models.generated), a config-only folder of a conf/model/
shape for `--load-format dummy` (specexp.models.hf_config), or a packaged GGUF dequantized to BF16
for a quantization that says so (specexp.models.hf_from_gguf); and `WrittenHfModel`, which makes a
driver load them (the target, a draft model, and with dummy weights the EAGLE-3 head)."""

from __future__ import annotations

from typing import Any

from specexp.measure.events import RuntimeFailure
from specexp.models import generated, hf_config
from specexp.models.hf_from_gguf import GgufConversionError, folder_for, stamp_of
from specexp.models.packaged import WeightsError
from specexp.runtimes.http.server_runtime import HttpRuntime
from specexp.spec.cache import cache_dir
from specexp.spec.experiment import ModelSpec, QuantizationSpec


def generated_dir(model: ModelSpec) -> str:
    """The Hugging Face directory specexp writes for a generated model (specexp.models.generated)."""
    return str(generated.hf_folder(model))


def written_dir(
    model: ModelSpec, load_format: str | None, quantization: QuantizationSpec | None = None
) -> str | None:
    """The folder specexp writes for `model`, when it writes one: a generated model with its weights
    (specexp.models.generated); with load_format dummy, a config-only folder of its shape
    (specexp.models.hf_config); with a quantization `dequantized_from` a GGUF file type, the
    model's packaged GGUF dequantized (specexp.models.hf_from_gguf). None: the server loads
    model_path / hf_id."""
    if model.generated_hf is not None:
        return generated_dir(model)
    if load_format == "dummy":
        try:
            return str(hf_config.model_folder(cache_dir() / "models", model))
        except hf_config.ConfigError as err:
            raise RuntimeFailure(
                "refused", "missing_model", f"runtime.load_format=dummy: {err}"
            ) from None
    if quantization is not None and quantization.dequantized_from:
        return dequantized_dir(model, quantization)
    return None


def dequantized_dir(model: ModelSpec, quantization: QuantizationSpec) -> str:
    """The Hugging Face folder of the model's packaged GGUF, dequantized to BF16; refused in one
    line when the model has none, it cannot be had, or it is not of the quantization's file type."""
    label = f"model={model.name} quantization={quantization.name}"
    if model.packaged_weights is None:
        raise RuntimeFailure(
            "refused",
            "missing_model",
            f"{label}: the model has no packaged GGUF to dequantize (docs/models.md); set "
            "runtime.model_path to a Hugging Face folder",
        )
    try:
        folder = folder_for(model.packaged_weights)
    except (WeightsError, GgufConversionError, OSError) as exc:
        raise RuntimeFailure("refused", "missing_model", f"{label}: {exc}") from None
    held = (stamp_of(folder) or {}).get("file_type")
    if str(held).upper() != str(quantization.dequantized_from).upper():
        raise RuntimeFailure(
            "refused",
            "quantization_mismatch",
            f"{label}: {model.packaged_weights.file} holds {held} weights, not "
            f"{quantization.dequantized_from}",
        )
    return str(folder)


class WrittenHfModel(HttpRuntime[Any]):
    """model_ref, served_model and the draft's weights of a driver whose engine loads Hugging Face
    folders: the folder specexp writes where it writes one (`written_dir`), served under the model's
    own name (not the cache directory's path)."""

    def _writes_model(self) -> bool:
        rt, written = self.rt, self.spec.quantization.dequantized_from is not None
        written = written or self.spec.model.generated_hf is not None or rt.load_format == "dummy"
        return not rt.model_path and not rt.url and written

    def server_env(self, port: int) -> dict[str, str]:
        """Offline for a folder specexp wrote: nothing to fetch (SGLang's start asks the hub)."""
        if self._writes_model():
            return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        return super().server_env(port)

    def model_ref(self) -> str:
        """runtime.model_path, else the folder specexp writes (a generated model, the config-only
        folder of load_format=dummy, a packaged GGUF dequantized), else hf_id."""
        if not self.rt.model_path:
            rt = self.rt
            written = written_dir(self.spec.model, rt.load_format, self.spec.quantization)
            if written is not None:
                return written
        return super().model_ref()

    def served_model(self) -> str:
        if not self.rt.served_model_name and self._writes_model():
            return self.spec.model.name
        return super().served_model()

    def draft_model_ref(self) -> str | None:
        draft = self.spec.draft_model
        if draft is not None and not self.rt.draft_model_path:
            written = written_dir(draft, self.rt.load_format, self.spec.quantization)
            if written is not None:
                return written
        return super().draft_model_ref()

    def draft_weights(self, engine: str) -> str | None:
        """HttpRuntime.draft_weights; with load_format=dummy and no runtime.draft_model_path, an
        EAGLE-3 head is the config-only folder specexp writes for the target (hf_config.eagle3_config)."""
        rt, drafter = self.rt, self.spec.drafter
        if rt.load_format == "dummy" and not rt.draft_model_path and drafter.name == "eagle3":
            try:
                return str(
                    hf_config.eagle3_folder(cache_dir() / "models", self.spec.model, drafter)
                )
            except hf_config.ConfigError as err:
                raise RuntimeFailure(
                    "refused", "missing_model", f"runtime.load_format=dummy: {err}"
                ) from None
        return super().draft_weights(engine)
