"""The OpenAI-style tokenizer endpoints vLLM and SGLang both serve: the bodies specexp sends and what
it reads from the answers (vLLM: vllm/entrypoints/serve/tokenize/protocol.py, docs/engines.md 1.3;
SGLang: entrypoints/openai/serving_tokenize.py, the same bodies and answers but `/detokenize`'s
text under `text`, docs/engines.md 2.4).

- `POST /tokenize {"model", "prompt"}` -> `{"count", "max_model_len", "tokens"}`
  (TokenizeCompletionRequest): text to ids, special tokens left out, as llama.cpp's adapter does;
- `POST /tokenize {"model", "messages", ...}` (TokenizeChatRequest): the chat template applied
  first, with the generation prompt and the template switches the request is sent with, and
  `add_special_tokens` false, as a chat completion defaults; a completion's prompt is counted with
  `add_special_tokens` true, as a completion defaults;
- `POST /detokenize {"model", "tokens"}` -> `{"prompt"}` (vLLM) or `{"text"}` (SGLang).

`ServerTokenizer` gives a driver `tokenize`, `count_prompt` and `detokenize` through them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from specexp.measure.events import Request
from specexp.runtimes.http.server_runtime import json_of, messages_of


def tokenize_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "prompt": text, "add_special_tokens": False}


def count_body(model: str, request: Request) -> dict[str, Any]:
    """The /tokenize body that counts `request`'s prompt as the server will."""
    if not request.chat:
        return {"model": model, "prompt": request.prompt, "add_special_tokens": True}
    return {
        "model": model,
        "messages": messages_of(request),
        "add_generation_prompt": True,
        "chat_template_kwargs": {"enable_thinking": request.thinking},
    }


def tokens_of(data: Any) -> list[int] | None:
    if isinstance(data, dict) and isinstance(data.get("tokens"), list):
        return [int(t) for t in data["tokens"]]
    return None


def count_of(data: Any) -> int | None:
    return int(data["count"]) if isinstance(data, dict) and "count" in data else None


def text_of(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    for key in ("prompt", "text"):
        if isinstance(data.get(key), str):
            return str(data[key])
    return None


class ServerTokenizer:
    """`tokenize`, `count_prompt` and `detokenize` of a runtime through the server's `/tokenize` and
    `/detokenize`. Mixed in before HttpRuntime (`class X(ServerTokenizer, HttpRuntime[...])`), whose
    `served_model` and `sync_client` it uses."""

    served_model: Callable[[], str]
    sync_client: Callable[[], httpx.Client]

    def tokenize(self, text: str) -> list[int] | None:
        return tokens_of(self._post("/tokenize", tokenize_body(self.served_model(), text)))

    def count_prompt(self, request: Request) -> int | None:
        return count_of(self._post("/tokenize", count_body(self.served_model(), request)))

    def detokenize(self, tokens: list[int]) -> str | None:
        body = {"model": self.served_model(), "tokens": tokens}
        return text_of(self._post("/detokenize", body))

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            with self.sync_client() as client:
                return json_of(client.post(path, json=body))
        except httpx.HTTPError:
            return None
