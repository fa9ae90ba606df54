"""A request's time to first token split where the engine says where it went (docs/vocabulary.md
section 2, "TTFT parts"; docs/engines.md says what each engine reports).

- `ttft_queue_s`: the engine's wait from receiving the request to first scheduling it. vLLM's
  per-request `queue_time_ms` (`--enable-per-request-metrics`: scheduled - queued in the engine
  core).
- `ttft_engine_s`: from first scheduling to the first token, in the engine: prefill of the uncached
  tail (chunked, beside the other requests of each step), any state a hybrid model copies in, and
  the step that samples the first token. vLLM's `time_to_first_token_ms` (first token - scheduled);
  llama-server's `timings.prompt_ms` (the prompt's processing, from which the first token comes).
- `ttft_frontend_s`: the rest of the client's TTFT, outside the engine core: HTTP, chat template
  and tokenization before, detokenization and streaming after. `ttft_s - ttft_queue_s -
  ttft_engine_s`, only where the engine gave both (llama-server's queue is not reported, so it has
  no frontend part).

The simulator reports the same keys as vLLM for its requests (specexp.sim.sequences), so a simulated
TTFT splits by the same code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

PARTS = ("ttft_queue_s", "ttft_engine_s", "ttft_frontend_s")

ENGINE_MS = ("time_to_first_token_ms", "prompt_ms")
"""Scheduling -> first token, in milliseconds, by engine (vLLM, llama-server)."""
QUEUE_MS = ("queue_time_ms",)
"""Received -> first scheduled, in milliseconds (vLLM)."""


def _ms(timings: Mapping[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = timings.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value) / 1e3
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def ttft_parts(ttft_s: float | None, timings: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The three parts of one request's TTFT (None where the engine did not say)."""
    if not isinstance(timings, Mapping):
        return dict.fromkeys(PARTS)
    queue, engine = _ms(timings, QUEUE_MS), _ms(timings, ENGINE_MS)
    frontend = (
        ttft_s - queue - engine
        if ttft_s is not None and queue is not None and engine is not None
        else None
    )
    return {"ttft_queue_s": queue, "ttft_engine_s": engine, "ttft_frontend_s": frontend}
