"""runtime=ollama: Ollama v0.33 (facts from engines.md section 4).

Starts `ollama serve`, which takes its address from the environment: OLLAMA_HOST=127.0.0.1:P (and
OLLAMA_NUM_PARALLEL, one slot per request of the largest concurrency, like llama.cpp's -np), given by
`server_env`. The native `/api/chat` streams NDJSON, not SSE, so requests go to the OpenAI-compatible
`/v1/chat/completions` and `/v1/completions` with `stream_options.include_usage` (engines.md 4);
the version is `GET /api/version`.

What Ollama cannot tell (engines.md 4, 6): there is no `/metrics`, no acceptance statistics anywhere
in the HTTP API, and no cached prompt tokens (OpenAI usage is only prompt/completion/total), so
every counter is None and acceptance metrics stay empty.

What specexp cannot set through the OpenAI-compatible endpoint (openai/openai.go @00988753,
ChatCompletionRequest and FromChatRequest): there is no `options` field and no `ignore_eos`, so
* k is Ollama's model option `draft_num_predict` (api/types.go; 0 disables drafting, default 4 with
  a separate DRAFT model, embedded MTP heads need it set explicitly). It can only be passed natively,
  `POST /api/chat {"options": {"draft_num_predict": K}}`, or baked into the model with a Modelfile
  line `PARAMETER draft_num_predict K` (`ollama create`). specexp does neither: build the model so,
  and `engine_info` records the value `/api/show` reports so a mismatch with k is visible;
* `ignore_eos` is dropped: generation may stop before max_tokens (completion counts come from usage).
"""

from __future__ import annotations

from typing import Any

import httpx

from specexp.events import EngineInfo, Request
from specexp.runtimes.base import RUNTIMES
from specexp.runtimes.http import HttpRuntime, get, json_of

DRAFTERS = {"none", "mtp", "dflash", "draft_model"}
"""What Ollama's llama-server runner wires up: draft-mtp, draft-dflash, and an external draft model
(`DRAFT` in the Modelfile; engines.md 4). DSpark, EAGLE-3, n-gram and the others are not."""


@RUNTIMES.register("ollama")
class OllamaRuntime(HttpRuntime):
    name = "ollama"
    default_port = 11434  # OLLAMA_HOST default 127.0.0.1:11434 (envconfig)
    health_path = "/api/version"
    metrics_path = None  # no Prometheus endpoint in server/ (engines.md 4)

    def build_argv(self, port: int) -> list[str]:
        self.engine_drafter(DRAFTERS, "Ollama")  # refuses a drafter Ollama does not have
        # `ollama serve` takes no flags: its settings are environment variables (server_env).
        return [self.spec.runtime.executable or "ollama", "serve", *self.spec.runtime.extra_args]

    def server_env(self, port: int) -> dict[str, str]:
        """The environment `ollama serve` needs: where to listen, and as many parallel slots as
        the largest concurrency (OLLAMA_NUM_PARALLEL, envconfig/config.go; not in engines.md)."""
        slots = max(self.spec.workload.concurrency)
        return {"OLLAMA_HOST": f"127.0.0.1:{port}", "OLLAMA_NUM_PARALLEL": str(slots)}

    def served_model(self) -> str:
        """An Ollama model tag (e.g. `qwen3.8:27b`): runtime.served_model_name, else
        runtime.model_path, else the model's name. Ollama does not pull on request: `ollama pull`
        (or `ollama create`) it first."""
        rt = self.spec.runtime
        return rt.served_model_name or rt.model_path or self.spec.model.name

    def request_extras(self, request: Request) -> dict[str, Any]:
        extras: dict[str, Any] = {"stream_options": {"include_usage": True}}
        if request.chat and not request.thinking:
            # reasoning_effort "none" is Ollama's think=false (FromChatRequest); thinking on is
            # the model's default, so nothing is sent for it.
            extras["reasoning_effort"] = "none"
        return extras

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        version = json_of(get(client, "/api/version"))
        reported = version.get("version") if isinstance(version, dict) else None
        details: dict[str, Any] = {"served_model": self.served_model()}
        try:
            show = json_of(client.post("/api/show", json={"model": self.served_model()}))
        except httpx.HTTPError:
            show = None
        if isinstance(show, dict):
            model = show.get("details") if isinstance(show.get("details"), dict) else {}
            for key in ("family", "parameter_size", "quantization_level", "format"):
                if key in model:
                    details[key] = model[key]
            details["draft_num_predict"] = modelfile_parameter(show.get("parameters"), "draft_num_predict")
        details["k_requested"] = self.spec.k
        return EngineInfo(
            runtime=self.name,
            version=str(reported) if reported else self.spec.runtime.version,
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
