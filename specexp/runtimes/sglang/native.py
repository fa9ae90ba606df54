"""SGLang's native `POST /generate`: the body specexp sends for a completion, and its stream read as
the OpenAI completion chunks the rest of specexp reads (docs/engines.md 2.3).

Why the native API: SGLang's per-request speculative counts (`spec_verify_ct`,
`spec_num_correct_drafts`, `spec_num_proposed_drafts`, `spec_correct_drafts_histogram`) are in a
finished request's `meta_info`, which `/generate` returns in every version, while its OpenAI
endpoints return them only from 0.5.2x on (`sglext.spec_tokens_details`; 0.5.12 has no such field),
and `/metrics` has no speculative counter before that either. A window's acceptance is the sum of its
requests' counts (specexp.runtimes.sglang.acceptance).

The stream (`sglang/srt/entrypoints/http_server.py` generate_request, `tokenizer_manager.py`
`_handle_batch_output`): `data: {"text", "output_ids", "meta_info"}` events, then `data: [DONE]`.
By default (`incremental_streaming_output` false) each event holds the whole text and ids so far; with
it, only the new ones. `meta_info.completion_tokens` is cumulative either way, so the tokens an event
brings are its growth; `meta_info.finish_reason` is null until the last event, then
`{"type": "length" | "stop" | "abort", ...}`. An error is `data: {"error": {"message"}}`.
"""

from __future__ import annotations

from typing import Any

from specexp.measure.events import Request
from specexp.runtimes.http.client import RawStream

PATH = "/generate"


def body(request: Request) -> dict[str, Any]:
    """The `/generate` body of a completion request (the prompt as given, no chat template)."""
    params: dict[str, Any] = {
        "max_new_tokens": request.max_tokens,
        "temperature": request.temperature,
    }
    if request.ignore_eos:
        params["ignore_eos"] = True
    if request.top_p != 1.0:
        params["top_p"] = request.top_p
    if request.seed is not None:
        params["sampling_seed"] = request.seed
    return {"text": request.prompt, "sampling_params": params, "stream": True}


def as_completion_chunks(raw: RawStream, incremental: bool) -> RawStream:
    """`raw`'s native events rewritten in place as `/v1/completions` chunks: the new text as
    `choices[0].text`, the cumulative counts as `usage`, `meta_info` kept beside them."""
    chunks: list[tuple[float, dict[str, Any]]] = []
    before = ""
    for t, chunk in raw.chunks:
        error = chunk.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            raw.fail("server_error", f"SGLang: {str(message)[:300]}")
            continue
        found_meta, found_text = chunk.get("meta_info"), chunk.get("text")
        meta: dict[str, Any] = found_meta if isinstance(found_meta, dict) else {}
        text: str = found_text if isinstance(found_text, str) else ""
        if incremental:
            new = text
        else:
            new = text[len(before) :] if text.startswith(before) else text
            before = text
        finish = meta.get("finish_reason")
        if isinstance(finish, dict):
            finish = finish.get("type")
        usage = {
            key: meta[key]
            for key in ("prompt_tokens", "completion_tokens")
            if isinstance(meta.get(key), int) and not isinstance(meta.get(key), bool)
        }
        chunks.append(
            (
                t,
                {
                    "id": meta.get("id") if isinstance(meta.get("id"), str) else None,
                    "choices": [
                        {"index": 0, "text": new, "finish_reason": str(finish) if finish else None}
                    ],
                    "usage": usage,
                    "meta_info": meta,
                },
            )
        )
    raw.chunks = chunks
    return raw
