"""OpenAI-compatible request bodies in, vLLM-shaped response bodies and stream chunks out."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from specexp.simserve.tokens import PromptError, chat_text, output_text, prompt_units


class ApiError(Exception):
    """An error answered as vLLM does: {"object": "error", "message", "type", "code"}."""

    TYPES = {
        400: "BadRequestError",
        404: "NotFoundError",
        405: "MethodNotAllowed",
        500: "InternalServerError",
    }

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def body(self) -> dict[str, Any]:
        return {
            "object": "error",
            "message": self.message,
            "type": self.TYPES.get(self.status, "Error"),
            "param": None,
            "code": self.status,
        }


@dataclass(frozen=True)
class Completion:
    """A validated /v1/chat/completions or /v1/completions request."""

    kind: Literal["chat", "completion"]
    request_id: str
    model: str
    prompt_tokens: int
    units: tuple[Any, ...]
    max_tokens: int
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignore_eos: bool

    @property
    def response_id(self) -> str:
        return f"{'chatcmpl' if self.kind == 'chat' else 'cmpl'}-{self.request_id}"


def parse(
    kind: Literal["chat", "completion"],
    raw: bytes,
    header_id: str | None,
    models: list[str],
    max_model_len: int,
) -> Completion:
    """Validate a request body; raise ApiError (400/404) on what vLLM would refuse."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError as err:
        raise ApiError(400, f"body is not JSON: {err}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "body must be a JSON object")
    model = body.get("model") or models[0]
    if model not in models:
        raise ApiError(404, f"The model `{model}` does not exist.")
    if body.get("n") not in (None, 1):
        raise ApiError(400, "n > 1 is not supported by the sim server")
    try:
        if kind == "chat":
            count, units = prompt_units(chat_text(body.get("messages")))
        else:
            count, units = prompt_units(body.get("prompt"))
    except PromptError as err:
        raise ApiError(400, str(err)) from None
    limit = body.get("max_completion_tokens") if kind == "chat" else None
    if limit is None:
        limit = body.get("max_tokens")
    if limit is None:
        limit = max_model_len - count
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ApiError(400, f"max_tokens must be an integer >= 1, got {limit!r}")
    if count + limit > max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {count + limit} tokens ({count} in the messages, {limit} in the "
            f"completion). Please reduce the length of the messages or completion.",
        )
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise ApiError(400, "stream_options must be an object")
    request_id = str(body.get("request_id") or header_id or uuid.uuid4().hex)
    stream = bool(body.get("stream", False))
    return Completion(
        kind=kind,
        request_id=request_id,
        model=model,
        prompt_tokens=count,
        units=units,
        max_tokens=limit,
        stream=stream,
        include_usage=stream and bool(options.get("include_usage", False)),
        continuous_usage=stream and bool(options.get("continuous_usage_stats", False)),
        ignore_eos=bool(body.get("ignore_eos", False)),
    )


def usage(req: Completion, completion_tokens: int, cached_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": req.prompt_tokens,
        "total_tokens": req.prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


def _envelope(req: Completion, created: int) -> dict[str, Any]:
    obj = "chat.completion.chunk" if req.kind == "chat" else "text_completion"
    return {"id": req.response_id, "object": obj, "created": created, "model": req.model}


def _sse(obj: dict[str, Any]) -> str:
    return "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n"


def stream_events(
    req: Completion, created: int, start: int, end: int, cached_tokens: int, final: bool
) -> str:
    """SSE text of one delivery: tokens [start, end) of the completion, and if `final` the
    finish reason, the usage chunk (include_usage) and `data: [DONE]`."""
    parts: list[str] = []
    finish = "length" if final else None
    if req.kind == "chat":
        if start == 0:  # vLLM sends the role first, with the first output
            role = {
                **_envelope(req, created),
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": ""},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
            if req.continuous_usage:
                role["usage"] = usage(req, 0, cached_tokens)
            parts.append(_sse(role))
        choice: dict[str, Any] = {
            "index": 0,
            "delta": {"content": output_text(start, end)},
            "logprobs": None,
            "finish_reason": finish,
        }
    else:
        choice = {
            "index": 0,
            "text": output_text(start, end),
            "logprobs": None,
            "finish_reason": finish,
            "stop_reason": None,
        }
    chunk = {**_envelope(req, created), "choices": [choice]}
    if req.continuous_usage:
        chunk["usage"] = usage(req, end, cached_tokens)
    parts.append(_sse(chunk))
    if final:
        if req.include_usage:
            parts.append(
                _sse(
                    {
                        **_envelope(req, created),
                        "choices": [],
                        "usage": usage(req, end, cached_tokens),
                    }
                )
            )
        parts.append("data: [DONE]\n\n")
    return "".join(parts)


def full_response(
    req: Completion, created: int, completion_tokens: int, cached_tokens: int
) -> dict[str, Any]:
    """The non-streamed response body."""
    text = output_text(0, completion_tokens)
    if req.kind == "chat":
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
        }
        obj = "chat.completion"
    else:
        choice = {
            "index": 0,
            "text": text,
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
        }
        obj = "text_completion"
    return {
        "id": req.response_id,
        "object": obj,
        "created": created,
        "model": req.model,
        "choices": [choice],
        "usage": usage(req, completion_tokens, cached_tokens),
    }
