"""A request's time to first token split where the engine says where it went (docs/vocabulary.md
section 2, "TTFT parts"; docs/engines.md says what each engine reports).

- `ttft_queue_s`: the engine's wait from receiving the request to first scheduling it. vLLM's
  per-request `queue_time_ms` (`--enable-per-request-metrics`: scheduled - queued in the engine
  core); SGLang's `meta_info.queue_time` (seconds in the scheduler's waiting queue).
- `ttft_engine_s`: from first scheduling to the first token, in the engine: prefill of the uncached
  tail (chunked, beside the other requests of each step), any state a hybrid model copies in, and
  the step that samples the first token. vLLM's `time_to_first_token_ms` (first token - scheduled);
  llama-server's `timings.prompt_ms` (the prompt's processing, from which the first token comes);
  SGLang's first response sent less the request received less its queue time
  (`meta_info.response_sent_to_client_ts - request_received_ts - queue_time`, with
  `--enable-metrics`: its tokenizer manager's tokenization and the detokenizer's hop are in it),
  only where its meta_info has `forward_entry_time` (otherwise `queue_time` is 0.0 whatever the
  wait, as on the H200 runs: queue and engine are then unknown, and the front end still known).
- `ttft_frontend_s`: the rest of the client's TTFT, outside the engine core: HTTP, chat template
  and tokenization before, detokenization and streaming after. `ttft_s - ttft_queue_s -
  ttft_engine_s`, only where the engine gave both (llama-server's queue is not reported, so it has
  no frontend part); for SGLang `ttft_s` less its server time (received -> first response sent).

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


def _sglang(timings: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    """(queue, engine, server) seconds from SGLang's meta_info timestamps: server = first response sent
    - request received; queue and engine only where SGLang tracked when the request entered the
    forward pass (`forward_entry_time`; without it its `queue_time` is a meaningless 0.0)."""
    received, sent = timings.get("request_received_ts"), timings.get("response_sent_to_client_ts")
    if not isinstance(received, (int, float)) or not isinstance(sent, (int, float)):
        return None, None, None
    server = float(sent) - float(received)
    if not math.isfinite(server) or server < 0:
        return None, None, None
    queue = timings.get("queue_time")
    if not isinstance(timings.get("forward_entry_time"), (int, float)) or not isinstance(
        queue, (int, float)
    ):
        return None, None, server
    if not 0 <= queue <= server:
        return None, None, server
    return float(queue), server - float(queue), server


def ttft_parts(ttft_s: float | None, timings: Mapping[str, Any] | None) -> dict[str, float | None]:
    """The three parts of one request's TTFT (None where the engine did not say)."""
    if not isinstance(timings, Mapping):
        return dict.fromkeys(PARTS)
    queue, engine = _ms(timings, QUEUE_MS), _ms(timings, ENGINE_MS)
    server = None if queue is None or engine is None else queue + engine
    if queue is None and engine is None:
        queue, engine, server = _sglang(timings)
    frontend = ttft_s - server if ttft_s is not None and server is not None else None
    return {"ttft_queue_s": queue, "ttft_engine_s": engine, "ttft_frontend_s": frontend}
