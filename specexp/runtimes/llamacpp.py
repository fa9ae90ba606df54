"""runtime=llamacpp: llama.cpp's llama-server (facts from engines.md section 3).

Starts `llama-server -m MODEL --host 127.0.0.1 --port P --metrics -np N -c CTX` plus the
speculative flags of the drafter (`--spec-type`, `--spec-draft-model`, `--spec-draft-n-max`);
the old `--draft-max` family is gone in this llama.cpp. Version from `/props` `build_info`;
counters from `/metrics` (`llamacpp:*`); token counts from `/tokenize`; per-request `timings`
(with `draft_n`/`draft_n_accepted` when drafting happened) are kept as engine timings.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from specexp import paths
from specexp.events import Counters, EngineInfo, Request
from specexp.models.tiny_gguf import TinyModelShape, ensure_model
from specexp.paths_cache import cache_dir
from specexp.runtimes import promtext
from specexp.runtimes.base import RUNTIMES, RuntimeFailure
from specexp.runtimes.http import HttpRuntime, json_of
from specexp.spec import ModelSpec

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
"""The llama-cpp-python sdist whose vendored llama.cpp scripts/build-llama-server.sh builds."""

SPEC_TYPES = {
    "draft_model": "draft-simple",
    "mtp": "draft-mtp",
    "dflash": "draft-dflash",
    "dspark": "draft-dspark",
    "eagle3": "draft-eagle3",
    "ngram": "ngram-simple",
}
"""drafter -> llama.cpp `--spec-type` (common/speculative.cpp at 0c1e570)."""
NEEDS_DRAFT_FILE = {"draft_model", "dflash", "dspark", "eagle3"}


def gguf_file_type(ftype: str) -> str:
    """llama-server's model_ftype text as a GGUF file type name: "all F32" -> F32,
    "Q4_K - Medium" -> Q4_K_M (llama_model_ftype_name in src/llama-model-loader.cpp)."""
    name = ftype.strip()
    for prefix in ("all ", "mostly "):
        if name.lower().startswith(prefix):
            name = name[len(prefix):]
    for words, suffix in ((" - Medium", "_M"), (" - Small", "_S"), (" - Large", "_L")):
        name = name.replace(words, suffix)
    return name.replace(" ", "_").upper()


def default_executable() -> Path:
    """$SPECEXP_LLAMA_SERVER, else the binary scripts/build-llama-server.sh caches."""
    env = os.environ.get("SPECEXP_LLAMA_SERVER")
    if env:
        return Path(env)
    return cache_dir() / "llama-server" / LLAMA_CPP_PYTHON_VERSION / "bin" / "llama-server"


def gguf_path(model: ModelSpec, given: str | None) -> str:
    """The GGUF to load: the one named in the config, or the one specexp generates."""
    if given:
        return given
    if model.generated_gguf is not None:
        shape = TinyModelShape(
            layers=model.num_hidden_layers, embd=model.hidden_size, ff=model.intermediate_size,
            heads=model.num_attention_heads, kv_heads=model.num_key_value_heads,
            context=model.max_position_embeddings,
        )
        g = model.generated_gguf
        return str(ensure_model(cache_dir() / "models", seed=g.seed, shape=shape, noise=g.noise))
    raise RuntimeFailure(
        "refused", "missing_model",
        f"model={model.name} has no GGUF: set runtime.model_path=/path/to/{model.name}.gguf",
    )


@RUNTIMES.register("llamacpp")
class LlamaCppRuntime(HttpRuntime):
    name = "llamacpp"
    default_port = 8080

    def build_argv(self, port: int) -> list[str]:
        spec, rt = self.spec, self.spec.runtime
        slots = spec.workload.slots
        context = rt.max_model_len or spec.model.max_position_embeddings
        executable = rt.executable or str(default_executable())
        argv = [
            executable, "-m", gguf_path(spec.model, rt.model_path),
            "--host", "127.0.0.1", "--port", str(port),
            "--metrics", "-np", str(slots), "-c", str(context * slots),
        ]
        if rt.prefix_caching:
            # POST /slots/{id}?action=erase (the prefix-cache reset) answers 501 unless slot actions
            # are enabled, and --slot-save-path is what enables them (checked on a real llama-server)
            slots_dir = self.job_dir / "slots"
            slots_dir.mkdir(parents=True, exist_ok=True)
            argv += ["--slot-save-path", str(slots_dir)]
        else:
            argv.append("--no-cache-prompt")
        if rt.served_model_name:
            argv += ["--alias", rt.served_model_name]
        argv += self._speculative_args()
        return argv + list(rt.extra_args)

    def _speculative_args(self) -> list[str]:
        spec = self.spec
        drafter = spec.drafter.name
        drafted = self.engine_drafter(SPEC_TYPES, "llama.cpp")
        if drafted is None:
            return []
        spec_type, k = drafted
        args = ["--spec-type", spec_type, "--spec-draft-n-max", str(k)]
        if drafter == "ngram":
            # ngram-simple drafts the m tokens after the matched n-gram: m is its k (checked against
            # a real llama-server: drafts then carry exactly k positions). n stays llama.cpp's default.
            args += ["--spec-ngram-simple-size-m", str(k)]
        if drafter in NEEDS_DRAFT_FILE:
            draft = spec.runtime.draft_model_path
            if draft is None and spec.draft_model is not None:
                draft = gguf_path(spec.draft_model, None)
            if draft is None:
                raise RuntimeFailure("refused", "missing_model", f"drafter={drafter} needs runtime.draft_model_path")
            args = ["--spec-draft-model", draft, *args]
        return args

    def served_model(self) -> str:
        return self.spec.runtime.served_model_name or self.spec.model.name

    def request_extras(self, request: Request) -> dict[str, Any]:
        extras: dict[str, Any] = {"stream_options": {"include_usage": True}, "timings_per_token": True}
        if request.chat and request.thinking is not None:
            extras["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        return extras

    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        t = lambda name: promtext.total(samples, f"llamacpp:{name}")  # noqa: E731
        spec_on = self.spec.drafter.name != "none"
        return Counters(
            drafts=t("spec_decode_num_drafts_total") if spec_on else None,
            draft_tokens=t("spec_decode_num_draft_tokens_total") if spec_on else None,
            accepted=t("spec_decode_num_accepted_tokens_total") if spec_on else None,
            accepted_per_position=self._per_position(samples) if spec_on else None,
            prompt_tokens=t("prompt_tokens_total"),
            cached_prompt_tokens=t("prompt_tokens_cached_total"),
            generation_tokens=t("tokens_predicted_total"),
        )

    def _per_position(self, samples: list[promtext.Sample]) -> tuple[float, ...]:
        """Per-position counters appear only once drafting happened: pad to k with zeros."""
        found = promtext.positions(samples, "llamacpp:spec_decode_num_accepted_tokens_per_pos_total") or ()
        k = self.spec.k or len(found)
        return tuple(found) + (0.0,) * max(0, k - len(found))

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        props = json_of(client.get("/props"))
        slots = json_of(client.get("/slots"))
        n_ctx = sum(int(s.get("n_ctx") or 0) for s in slots) if isinstance(slots, list) else None
        speculative = any(bool(s.get("speculative")) for s in slots) if isinstance(slots, list) else None
        ftype = props.get("model_ftype") if isinstance(props, dict) else None
        self._check_file_type(ftype)
        return EngineInfo(
            runtime=self.name,
            version=props.get("build_info") if isinstance(props, dict) else None,
            kv_cache_tokens=n_ctx or None,
            details={
                "total_slots": props.get("total_slots") if isinstance(props, dict) else None,
                "model_ftype": props.get("model_ftype") if isinstance(props, dict) else None,
                "speculative": speculative,
            },
        )

    def _check_file_type(self, ftype: object) -> None:
        """Refuse a run whose `quantization` label is not what the GGUF holds: the record would
        otherwise compare, say, Q4_K_M weights as FP8 ones."""
        if not isinstance(ftype, str) or not ftype.strip():
            return
        loaded = gguf_file_type(ftype)
        q = self.spec.quantization
        expected = q.engine_names.get("llamacpp")
        if expected is None or expected.upper() != loaded:
            known = ", ".join(sorted(paths.options("quantization")))
            raise RuntimeFailure(
                "refused", "quantization_mismatch",
                f"the GGUF holds {loaded} weights (llama-server /props model_ftype '{ftype}') but the run is "
                f"labelled quantization={q.name} (llama.cpp: {expected or 'no GGUF file type'}); set quantization= "
                f"to the matching scheme (accepted: {known})",
            )

    def tokenize(self, text: str) -> list[int] | None:
        with self.sync_client() as client:
            response = client.post("/tokenize", json={"content": text, "add_special": False})
        data = json_of(response)
        return [int(t) for t in data["tokens"]] if isinstance(data, dict) and "tokens" in data else None

    def detokenize(self, tokens: list[int]) -> str | None:
        with self.sync_client() as client:
            response = client.post("/detokenize", json={"tokens": tokens})
        data = json_of(response)
        return str(data["content"]) if isinstance(data, dict) and "content" in data else None

    def reset_prefix_cache(self) -> bool:
        """Erase every slot's cache (`POST /slots/{id}?action=erase`); True when all said so."""
        with self.sync_client() as client:
            slots = json_of(client.get("/slots"))
            if not isinstance(slots, list):
                return False
            ok = [client.post(f"/slots/{s['id']}", params={"action": "erase"}).status_code == 200 for s in slots]
        return all(ok)
