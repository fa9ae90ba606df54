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

from specexp.events import EngineInfo, Request
from specexp.runtimes.base import RUNTIMES, RuntimeFailure
from specexp.runtimes.http import HttpRuntime


@RUNTIMES.register("openai")
class OpenAIRuntime(HttpRuntime):
    name = "openai"
    health_path = "/v1/models"
    metrics_path = None
    _models: list[str] | None = None

    def build_argv(self, port: int) -> list[str] | None:
        return None

    @property
    def base_url(self) -> str:
        """runtime.url without a trailing `/v1`: the paths (`/v1/models`, `/v1/chat/completions`)
        carry it, and base URLs are often given with it (`http://host:8000/v1`)."""
        url = (self.spec.runtime.url or "").rstrip("/")
        if not url:
            raise RuntimeFailure("refused", "not_startable", "runtime=openai needs runtime.url=http://...")
        return url[: -len("/v1")] if url.endswith("/v1") else url

    def served_model(self) -> str:
        if self.spec.runtime.served_model_name:
            return self.spec.runtime.served_model_name
        models = self.models()
        if models:
            return models[0]
        raise RuntimeFailure(
            "failed", "no_model",
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
        if not self._models and not self.spec.runtime.served_model_name:
            raise RuntimeFailure(
                "refused", "no_model", f"{self.base_url}/v1/models lists no model: set runtime.served_model_name",
            )
        details: dict[str, Any] = {"models": list(self._models), "served_model": self.served_model()}
        return EngineInfo(runtime=self.name, version=self.spec.runtime.version, details=details)


def model_ids(client: httpx.Client) -> list[str]:
    """Ids of `GET /v1/models` (`{"object": "list", "data": [{"id": ...}, ...]}`), in order."""
    response = client.get("/v1/models")
    if response.status_code != 200:
        return []
    try:
        data = response.json()
    except ValueError:
        return []
    cards = data.get("data") if isinstance(data, dict) else None
    if not isinstance(cards, list):
        return []
    return [str(c["id"]) for c in cards if isinstance(c, dict) and c.get("id")]
