"""runtime=openai: an already running OpenAI-compatible endpoint, `runtime=openai runtime.url=http://...`.

specexp starts nothing (`build_argv` is None, so `start` refuses without runtime.url). Readiness and
the served model come from `GET /v1/models` (the first model, unless runtime.served_model_name is
set); requests stream from `/v1/chat/completions` or `/v1/completions` with
`stream_options.include_usage`. Nothing engine-specific is assumed: no `/metrics` (counters all
None, so no acceptance figures), no tokenizer endpoint, no prefix-cache reset, and the version is
runtime.version if the user states it. An API key is read from the environment variable named by
runtime.api_key_env and sent as a bearer token (HttpRuntime.headers); only the variable's name is
in the config, the key is never recorded.
"""

from __future__ import annotations

from typing import Any

import httpx

from specexp.measure.events import EngineInfo, Request, RuntimeFailure
from specexp.runtimes.base import register
from specexp.runtimes.http.server_runtime import HttpRuntime
from specexp.spec.runtime import OpenaiRuntimeSpec


@register(OpenaiRuntimeSpec)
class OpenAIRuntime(HttpRuntime[OpenaiRuntimeSpec]):
    health_path = "/v1/models"
    metrics_path = None
    knows_setup = False
    _models: list[str] | None = None

    def build_argv(self, port: int) -> list[str] | None:
        return None

    @property
    def base_url(self) -> str:
        """runtime.url without a trailing `/v1`: the paths (`/v1/models`, `/v1/chat/completions`)
        carry it, and base URLs are often given with it (`http://host:8000/v1`)."""
        url = (self.rt.url or "").rstrip("/")
        if not url:
            raise RuntimeFailure(
                "refused", "not_startable", "runtime=openai needs runtime.url=http://..."
            )
        return url[: -len("/v1")] if url.endswith("/v1") else url

    def served_model(self) -> str:
        if self.rt.served_model_name:
            return self.rt.served_model_name
        models = self.models()
        if models:
            return models[0]
        raise RuntimeFailure(
            "failed",
            "no_model",
            f"{self.base_url}/v1/models lists no model: set runtime.served_model_name",
        )

    def models(self) -> list[str]:
        """Model ids of `GET /v1/models`, fetched once."""
        if self._models is None:
            try:
                with self.sync_client() as client:
                    self._models = model_ids(client)
            except httpx.HTTPError:
                return []
        return self._models

    def request_extras(self, request: Request) -> dict[str, Any]:
        return {"stream_options": {"include_usage": True}}

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        self._models = model_ids(client)
        if not self._models and not self.rt.served_model_name:
            raise RuntimeFailure(
                "refused",
                "no_model",
                f"{self.base_url}/v1/models lists no model: set runtime.served_model_name",
            )
        said = self_description(client, self.served_model())
        details: dict[str, Any] = {
            "models": list(self._models),
            "served_model": self.served_model(),
            **said,
        }
        version = self.rt.version or said.get("server_version")
        return EngineInfo(runtime=self.name, version=version, details=details)


def model_ids(client: httpx.Client) -> list[str]:
    """Ids of `GET /v1/models` (`{"object": "list", "data": [{"id": ...}, ...]}`), in order."""
    return [str(c["id"]) for c in _cards(client) if c.get("id")]


def _cards(client: httpx.Client) -> list[dict[str, Any]]:
    cards = (_json(client, "/v1/models") or {}).get("data")
    return [c for c in cards if isinstance(c, dict)] if isinstance(cards, list) else []


def _json(client: httpx.Client, path: str) -> dict[str, Any] | None:
    """`GET path` as a JSON object, or None (absent endpoint, error, not JSON)."""
    try:
        response = client.get(path)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        data = response.json()
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def self_description(client: httpx.Client, served: str) -> dict[str, Any]:
    """What the server says about itself, by the endpoints the engines serve: vLLM `/version` and
    `max_model_len` in `/v1/models`, SGLang `/server_info` (`version`, `context_length`), llama.cpp
    `/props` (`build_info`, `n_ctx` per slot). `conditions` holds those that are conditions."""
    out: dict[str, Any] = {}
    conditions: dict[str, Any] = {}
    card = next((c for c in _cards(client) if c.get("id") == served), None)
    if card and isinstance(card.get("max_model_len"), int):
        conditions["max_model_len"] = card["max_model_len"]
    if (version := _json(client, "/version")) and isinstance(version.get("version"), str):
        out["server_version"] = version["version"]
    if info := _json(client, "/server_info") or _json(client, "/get_server_info"):
        if isinstance(info.get("version"), str):
            out["server_version"] = "sglang " + info["version"]
        if isinstance(info.get("context_length"), int):
            conditions["max_model_len"] = info["context_length"]
    if (props := _json(client, "/props")) and isinstance(props.get("build_info"), str):
        out["server_version"] = "llama.cpp " + props["build_info"]
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        if isinstance(n_ctx, int):
            conditions["max_model_len"] = n_ctx
    if conditions:
        out["conditions"] = conditions
    return out
