"""vLLM's tokenizer endpoints: the bodies specexp sends and what it reads from the answers
(vllm/entrypoints/serve/tokenize/protocol.py; docs/engines.md section 1.3).

- `POST /tokenize {"model", "prompt"}` -> `{"count", "max_model_len", "tokens"}`
  (TokenizeCompletionRequest): text to ids, special tokens left out, as llama.cpp's adapter does;
- `POST /tokenize {"model", "messages", ...}` (TokenizeChatRequest): the chat template applied
  first, with the generation prompt and the template switches the request is sent with, and
  `add_special_tokens` false, as a chat completion defaults; a completion's prompt is counted with
  `add_special_tokens` true, as a completion defaults;
- `POST /detokenize {"model", "tokens"}` -> `{"prompt"}`.
"""

from __future__ import annotations

from typing import Any

from specexp.measure.events import Request
from specexp.runtimes.http.runtime import messages_of


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
    return str(data["prompt"]) if isinstance(data, dict) and "prompt" in data else None
