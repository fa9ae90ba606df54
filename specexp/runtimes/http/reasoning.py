"""Which generated tokens are the model's reasoning and which its answer, from the stream alone.

A server with a reasoning parser sends the reasoning apart (`reasoning_content` or `reasoning` in a
chat delta; Ollama's `message.thinking`); one without sends it in the text, inside `<think>` ...
`</think>` (or, where the chat template opened the span in the prompt, before a lone `</think>`).
Each token-bearing chunk is the answer's when any of its text outside such a span is more than
white space, the reasoning's otherwise (docs/vocabulary.md, "Thinking").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from specexp.measure.events import TokenEvent

OPEN, CLOSE = "<think>", "</think>"
_SPAN = re.compile(re.escape(OPEN) + r".*?(?:" + re.escape(CLOSE) + r"|\Z)", re.DOTALL)
REASONING_KEYS = ("reasoning_content", "reasoning")


def split_chunk(chunk: dict[str, Any]) -> tuple[str, str]:
    """(reasoning text, other text) of one chunk, as the server separated them."""
    choices = chunk.get("choices") or []
    if not choices and isinstance(chunk.get("message"), dict):  # Ollama native /api/chat
        message = chunk["message"]
        return str(message.get("thinking") or ""), str(message.get("content") or "")
    if not choices or not isinstance(choices[0], dict):
        return "", str(chunk.get("response") or "")
    delta = choices[0].get("delta")
    if isinstance(delta, dict):
        reasoning = "".join(str(delta.get(k) or "") for k in REASONING_KEYS)
        return reasoning, str(delta.get("content") or "")
    return "", str(choices[0].get("text") or "")


def think_spans(text: str) -> list[tuple[int, int]]:
    """The [start, end) character ranges of `text` inside reasoning tags, the tags included: every
    `<think>` ... `</think>` (an unclosed one runs to the end), and everything before a `</think>`
    that no `<think>` opened (the template opened it)."""
    spans = [(m.start(), m.end()) for m in _SPAN.finditer(text)]
    lone = text.find(CLOSE)
    if lone >= 0 and not any(a <= lone < b for a, b in spans):
        spans.insert(0, (0, lone + len(CLOSE)))
    return spans


def mark_reasoning(
    events: Sequence[TokenEvent], parts: Sequence[tuple[str, str]]
) -> list[TokenEvent]:
    """`events` with `reasoning` set on those whose chunk carried reasoning and no answer; `parts`
    are the (reasoning, other) texts of each event's chunk, in order."""
    answer = "".join(other for _, other in parts)
    spans = think_spans(answer) if OPEN in answer or CLOSE in answer else []
    out, at = [], 0
    for event, (reasoning, other) in zip(events, parts, strict=True):
        start, at = at, at + len(other)
        outside = "".join(
            ch for i, ch in enumerate(other, start) if not any(a <= i < b for a, b in spans)
        )
        thought = bool(reasoning) or len(other) > len(outside)
        out.append(event._replace(reasoning=thought and not outside.strip()))
    return out
