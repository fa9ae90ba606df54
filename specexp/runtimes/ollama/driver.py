"""runtime=ollama: Ollama v0.33 (facts from docs/engines.md section 4).

Starts `ollama serve`, which takes its address from the environment: OLLAMA_HOST=127.0.0.1:P (and
OLLAMA_NUM_PARALLEL, one slot per request of the largest concurrency, like llama.cpp's -np), given by
`server_env`. Requests go to the native API, `/api/chat` and `/api/generate` (`raw`: the prompt as
given), streamed as NDJSON: its final object (`done: true`) carries the engine's own figures,
`eval_count`, `eval_duration`, `prompt_eval_count`, `prompt_eval_duration`, `load_duration` and
`total_duration` (nanoseconds; api/types.go Metrics), which are kept as `engine_timings` as
llama.cpp's `timings` are, and give the trace's token counts. The native `options` carry
`num_predict` (max_tokens), `temperature` and, with a drafter, k as `draft_num_predict` (api/types.go;
0 disables drafting); `think` is the thinking switch. The version is `GET /api/version`.

What Ollama cannot tell (docs/engines.md 4, 6): there is no `/metrics`, no acceptance statistics anywhere
in the HTTP API, and no cached prompt tokens (`prompt_eval_count` includes them), so every counter
is None and acceptance metrics stay empty. There is no `ignore_eos`: generation may stop before
max_tokens (completion counts come from `eval_count`, which counts the end-of-sequence token).
`engine_info` records the `draft_num_predict` a model's Modelfile sets, beside the k asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from specexp.measure.events import EngineInfo, Request, RuntimeFailure
from specexp.runtimes.base import register
from specexp.runtimes.gguf_files import gguf_path
from specexp.runtimes.http.client import RawStream
from specexp.runtimes.http.server_runtime import HttpRuntime, get, json_of, messages_of
from specexp.runtimes.ollama.models import (
    binary_version,
    file_digest,
    has_model,
    import_gguf,
    model_tag,
    ollama_template,
)
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.runtime import OllamaRuntimeSpec, ServerRuntimeSpec

TIMINGS = (
    "eval_count",
    "eval_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "load_duration",
    "total_duration",
)
"""The engine's own figures on a native response's final object (api/types.go Metrics; durations in ns)."""


@register(OllamaRuntimeSpec)
class OllamaRuntime(HttpRuntime[OllamaRuntimeSpec]):
    default_port = 11434  # OLLAMA_HOST default 127.0.0.1:11434 (envconfig)
    health_path = "/api/version"
    chat_path = "/api/chat"
    completion_path = "/api/generate"
    metrics_path = None  # no Prometheus endpoint in server/ (docs/engines.md 4)

    _tag: str | None = None
    _template: str | None = None
    """The chat template a GGUF is imported with (specexp.runtimes.ollama.models.ollama_template)."""
    _thinks: bool | None = None
    """Whether the served model can think (`thinking` in /api/show's capabilities); None: unknown."""

    @classmethod
    def installed_version(cls, spec: ExperimentSpec) -> str | None:
        """What the `ollama` binary that would start says it is (`ollama --version`)."""
        rt = spec.runtime
        return (
            binary_version(rt.executable or "ollama") if isinstance(rt, ServerRuntimeSpec) else None
        )

    def build_argv(self, port: int) -> list[str]:
        self.engine_drafter("Ollama")  # refuses a drafter Ollama does not have
        executable = self.rt.executable or "ollama"
        refusal = self.rt.version_refusal(self.spec.drafter.name, binary_version(executable))
        if refusal:
            raise RuntimeFailure("refused", "unsupported_drafter", refusal)
        # `ollama serve` takes no flags: its settings are environment variables (server_env).
        return [executable, "serve", *self.rt.extra_args]

    def server_env(self, port: int) -> dict[str, str]:
        """The environment `ollama serve` needs: where to listen, and as many parallel slots as
        the largest concurrency (OLLAMA_NUM_PARALLEL, envconfig/config.go; not in docs/engines.md)."""
        slots = self.spec.workload.slots
        return {"OLLAMA_HOST": f"127.0.0.1:{port}", "OLLAMA_NUM_PARALLEL": str(slots)}

    def served_model(self) -> str:
        """An Ollama model tag: runtime.served_model_name; else runtime.model_path when it is a tag
        (e.g. `qwen3.8:27b`: `ollama pull` it first, Ollama does not pull on request); else the
        name the GGUF specexp imports is served under (specexp.runtimes.ollama.models); else the
        model's name."""
        rt = self.rt
        if rt.served_model_name:
            return rt.served_model_name
        if rt.model_path and not rt.model_path.endswith(".gguf"):
            return rt.model_path
        gguf = self.gguf()
        if gguf is None:
            return self.spec.model.name
        if self._tag is None:
            self._template = ollama_template(gguf)
            self._tag = model_tag(
                self.spec.model.name, self.spec.quantization.name, file_digest(gguf), self._template
            )
        return self._tag

    def gguf(self) -> Path | None:
        """The GGUF file this job's model is, where specexp knows one: runtime.model_path=FILE.gguf,
        a packaged trained model, or one specexp writes."""
        rt, model = self.rt, self.spec.model
        if rt.model_path and rt.model_path.endswith(".gguf"):
            return Path(rt.model_path)
        if model.packaged_weights is None and model.generated_gguf is None:
            return None
        return Path(gguf_path(model, None))

    def body(self, request: Request) -> dict[str, Any]:
        """A native `/api/chat` or `/api/generate` body (api/types.go ChatRequest, GenerateRequest)."""
        options: dict[str, Any] = {
            "num_predict": request.max_tokens,
            "temperature": request.temperature,
        }
        if self.rt.max_model_len is not None:
            options["num_ctx"] = self.rt.max_model_len  # api/types.go Runner.NumCtx
        if request.top_p != 1.0:
            options["top_p"] = request.top_p
        if request.seed is not None:
            options["seed"] = request.seed  # api/types.go Options.Seed
        k = self.spec.k
        if self.spec.drafter.name != "none" and k is not None:
            options["draft_num_predict"] = k
        body: dict[str, Any] = {"model": self.served_model(), "stream": True, "options": options}
        if request.chat:
            body["messages"] = messages_of(request)
        else:
            body["prompt"], body["raw"] = request.prompt, True
        if request.thinking and self._thinks is False:
            self._note(  # Ollama answers think: true with 400 for such a model (server/routes.go)
                f"{self.served_model()} has no thinking mode (/api/show capabilities): "
                "a request that asks it to think goes without `think`"
            )
        elif request.thinking is not None:
            body["think"] = bool(request.thinking)
        return body

    def stream_details(self, raw: RawStream) -> dict[str, Any]:
        """The final NDJSON object's engine figures: token counts and `engine_timings`."""
        final = next(
            (chunk for _, chunk in reversed(raw.chunks) if chunk.get("done") is True), None
        )
        return native_details(final) if final is not None else {}

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        gguf, tag = self.gguf(), self.served_model()
        if gguf is not None and tag == self._tag and not has_model(client, tag):
            import_gguf(client, gguf, tag, self.rt.start_timeout_s, self._template)
        version = json_of(get(client, "/api/version"))
        reported = version.get("version") if isinstance(version, dict) else None
        details: dict[str, Any] = {"served_model": self.served_model()}
        try:
            show = json_of(client.post("/api/show", json={"model": self.served_model()}))
        except httpx.HTTPError:
            show = None
        if isinstance(show, dict):
            capabilities = show.get("capabilities")
            if isinstance(capabilities, list):
                self._thinks = "thinking" in capabilities
                details["capabilities"] = [str(c) for c in capabilities]
            found = show.get("details")
            model: dict[str, Any] = found if isinstance(found, dict) else {}
            for key in ("family", "parameter_size", "quantization_level", "format"):
                if key in model:
                    details[key] = model[key]
            details["draft_num_predict"] = modelfile_parameter(
                show.get("parameters"), "draft_num_predict"
            )
        details["k_requested"] = self.spec.k
        # Ollama has no ignore_eos (api/types.go Options): a generation may stop before max_tokens,
        # whatever the workload asked, and the record says so.
        details["conditions"] = {"ignore_eos": False}
        return EngineInfo(
            runtime=self.name,
            version=str(reported) if reported else self.rt.version,
            details=details,
        )


def modelfile_parameter(parameters: Any, key: str) -> str | None:
    """A value of `/api/show`'s `parameters`, a text of `name value` lines (None when absent)."""
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0] == key:
            return parts[1].strip().strip('"')
    return None


def native_details(final: dict[str, Any]) -> dict[str, Any]:
    """Token counts and engine timings of a native response's final object: the figures as Ollama
    sent them, plus decode and prefill rates derived from them (tokens per second)."""
    timings = {
        key: final[key]
        for key in TIMINGS
        if isinstance(final.get(key), (int, float)) and not isinstance(final.get(key), bool)
    }
    out: dict[str, Any] = {}
    if "eval_count" in timings:
        out["completion_tokens"] = int(timings["eval_count"])
    if "prompt_eval_count" in timings:
        out["prompt_tokens"] = int(timings["prompt_eval_count"])
    for count, duration, rate in (
        ("eval_count", "eval_duration", "eval_tps"),
        ("prompt_eval_count", "prompt_eval_duration", "prompt_eval_tps"),
    ):
        if timings.get(duration) and count in timings:
            timings[rate] = timings[count] / timings[duration] * 1e9
    if timings:
        out["engine_timings"] = timings
    return out
