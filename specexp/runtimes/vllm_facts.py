"""What a vLLM server says about itself in its metrics and its log: KV capacity, cache facts, errors."""

from __future__ import annotations

import re
from typing import Any

from specexp.runtimes import promtext


def cache_config(samples: list[promtext.Sample]) -> tuple[int | None, dict[str, Any]]:
    """KV capacity in tokens as vLLM reports it, Σ over engines of `vllm:cache_config_info`'s
    `kv_cache_size_tokens` (CacheConfig's group-aware capacity, vllm/config/cache.py; vLLM says
    num_gpu_blocks x block_size "can be wrong for hybrid models"), and the cache facts of that
    info-style gauge, whose labels are CacheConfig fields (1.2). None when no engine reports it."""
    infos = [s.labels for s in samples if s.name == "vllm:cache_config_info"]
    if not infos:
        return None, {}
    sizes = [_int(labels.get("kv_cache_size_tokens")) for labels in infos]
    total = None if None in sizes else sum(s for s in sizes if s is not None)
    facts = _cache_facts(infos[0])
    if total is not None:
        facts["kv_cache_tokens_source"] = "cache_config_info kv_cache_size_tokens"
    return total, facts


KV_LOG_LINE = re.compile(r"(?:GPU|CPU|XPU|TPU|HPU|NPU|[A-Z]+)(?: \+ host)? KV cache size: ([\d,]+) tokens")
"""`update_kv_cache_capacity` in vllm/v1/core/kv_cache_utils.py logs "<device> KV cache size: N
tokens, Maximum concurrency ..." once per engine (e.g. "CPU KV cache size: 1,048,576 tokens")."""


ENGINE_ERROR = re.compile(r"^(?:\(\w+ pid=\d+\) )?(?:ERROR [^\]]*\] )?((?:ValueError|RuntimeError|torch\.OutOfMemoryError|"
                          r"NotImplementedError|AssertionError|vllm\.\S*Error)\b.*)$", re.MULTILINE)
"""The exception line of a vLLM traceback in its log (the engine core's own error, which the API
server re-raises as "Engine core initialization failed")."""
KV_TOO_SMALL = re.compile(r"KV cache is needed|No available memory for the cache blocks")
"""vllm/v1/core/kv_cache_utils.py: the KV cache for one request of max_model_len does not fit."""


def engine_error(log: str) -> str | None:
    """The first exception vLLM's log names (the root cause; later ones are its echoes), or None."""
    found = ENGINE_ERROR.search(log or "")
    return found.group(1).strip() if found else None


def logged_kv_tokens(log: str) -> int | None:
    """Σ of the KV cache sizes a vLLM server log states (one line per engine), or None."""
    found = [int(m.group(1).replace(",", "")) for m in KV_LOG_LINE.finditer(log)]
    return sum(found) if found else None


def _cache_facts(labels: dict[str, str]) -> dict[str, Any]:
    keys = ("block_size", "num_gpu_blocks", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization",
            "kv_cache_size_tokens", "kv_cache_memory_bytes")
    return {"cache_config": {k: labels[k] for k in keys if k in labels}}


def mean(samples: list[promtext.Sample], name: str) -> float | None:
    values = [s.value for s in samples if s.name == name]
    return sum(values) / len(values) if values else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
