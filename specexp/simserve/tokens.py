"""The sim server's stand-in for a tokenizer: deterministic counts, cache blocks and output text.

The simulator has no vocabulary, so a prompt is measured by a fixed rule:

- a completion `prompt` given as a list of integers is that many tokens (token ids, as vLLM
  accepts them); a string is ceil(characters / 4) tokens, at least 1;
- chat `messages` are rendered as one `role: content` line each (list contents: their `text`
  parts joined), lines joined by a newline, and counted like a string.

Prefix caching works on the same units: token i of a string prompt is its characters
[4i, 4i + 4); full blocks (the simulated engine's cache block, 16 tokens by default) are hashed
in a chain (a block's hash covers every block before it), as vLLM's prefix cache does; the
engine's one prefix cache (kvcache.KvPool) keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specexp.sim.kvcache import DEFAULT_BLOCK_TOKENS

CHARS_PER_TOKEN = 4

_WORDS = (
    " the",
    " and",
    " for",
    " per",
    " key",
    " map",
    " set",
    " get",
    " val",
    " run",
    " new",
    " old",
    " now",
    " end",
    " use",
    " put",
    " row",
    " col",
    " bit",
    " log",
    " max",
    " min",
    " sum",
    " top",
    " via",
    " arg",
    " ref",
    " fix",
    " add",
    " cut",
    " low",
    " raw",
)


class PromptError(ValueError):
    """A prompt the server refuses (HTTP 400)."""


def chat_text(messages: Any) -> str:
    """Chat messages as the text the token count and the prefix cache see."""
    if not isinstance(messages, list) or not messages:
        raise PromptError("'messages' must be a non-empty list")
    lines = []
    for message in messages:
        if not isinstance(message, dict):
            raise PromptError("every message must be an object with 'role' and 'content'")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                str(part.get("text") or "") for part in content if isinstance(part, dict)
            )
        lines.append(f"{message.get('role', 'user')}: {content or ''}")
    return "\n".join(lines)


def prompt_units(prompt: Any) -> tuple[int, tuple[Any, ...]]:
    """(token count, units for block hashing) of a completion prompt or rendered chat text."""
    if (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        return len(prompt), tuple(prompt)
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise PromptError("'prompt' must be a string or a list of token ids")
    if not prompt:
        raise PromptError("'prompt' is empty")
    units = tuple(prompt[i : i + CHARS_PER_TOKEN] for i in range(0, len(prompt), CHARS_PER_TOKEN))
    return len(units), units


def block_hashes(units: Sequence[Any], block: int = DEFAULT_BLOCK_TOKENS) -> list[int]:
    """Chained hashes of the full blocks of `units` (a partial last block is not cached)."""
    out: list[int] = []
    parent = 0
    for start in range(0, len(units) - block + 1, block):
        parent = hash((parent, tuple(units[start : start + block])))
        out.append(parent)
    return out


def output_text(start: int, end: int) -> str:
    """Text of generated tokens [start, end) of a request: one short word per token."""
    return "".join(_WORDS[(i * 7 + 3) % len(_WORDS)] for i in range(start, end))
