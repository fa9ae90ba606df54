"""What a vLLM server says about itself in its metrics and its log: KV capacity, cache facts, errors."""

from __future__ import annotations

import re
from typing import Any

from specexp.runtimes.http import promtext


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


KV_LOG_LINE = re.compile(
    r"(?:GPU|CPU|XPU|TPU|HPU|NPU|[A-Z]+)(?: \+ host)? KV cache size: ([\d,]+) tokens"
)
"""`update_kv_cache_capacity` in vllm/v1/core/kv_cache_utils.py logs "<device> KV cache size: N
tokens, Maximum concurrency ..." once per engine (e.g. "CPU KV cache size: 1,048,576 tokens")."""


ENGINE_ERROR = re.compile(
    r"^(?:\(\w+ pid=\d+\) )?(?:ERROR [^\]]*\] )?((?:ValueError|RuntimeError|torch\.OutOfMemoryError|"
    r"NotImplementedError|AssertionError|vllm\.\S*Error)\b.*)$",
    re.MULTILINE,
)
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
    keys = (
        "block_size",
        "num_gpu_blocks",
        "cache_dtype",
        "enable_prefix_caching",
        "gpu_memory_utilization",
        "kv_cache_size_tokens",
        "kv_cache_memory_bytes",
        "mamba_block_size",
        "mamba_cache_mode",
        "mamba_ssm_cache_dtype",
        "mamba_page_size_padded",
    )
    return {"cache_config": {k: labels[k] for k in keys if k in labels}}


def mean(samples: list[promtext.Sample], name: str) -> float | None:
    values = [s.value for s in samples if s.name == name]
    return sum(values) / len(values) if values else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


ENGINE_PATHS = {
    "attention_backend": re.compile(
        r"Using (\S+) attention backend out of potential backends|Using (\S+) backend\.$"
    ),
    "gdn_prefill_backend": re.compile(r"Using (.+?) GDN prefill kernel"),
    "async_scheduling": re.compile(r"Asynchronous scheduling is (enabled|disabled)\."),
    "attention_block_size": re.compile(r"Setting attention block size to (\d+) tokens"),
    "mamba_cache_mode": re.compile(r"Mamba cache mode is set to '(\w+)'"),
    "max_num_batched_tokens": re.compile(
        r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)"
    ),
    "cudagraph_mode": re.compile(r"'cudagraph_mode': <CUDAGraphMode\.(\w+)"),
    "compilation_mode": re.compile(r"compilation_config=\{'mode': <CompilationMode\.(\w+)"),
    "load_format": re.compile(r"Initializing a V1 LLM engine .*? load_format=([^,]+),"),
    "jit_monitor": re.compile(r"Kernel JIT monitor activated; .* mode=(\w+)"),
    "init_engine_s": re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"
    ),
    "torch_compile_s": re.compile(r"torch\.compile took ([\d.]+) s in total"),
    "graph_capture_s": re.compile(r"Graph capturing finished in ([\d.]+) secs"),
}
"""What vLLM says at start-up about the paths it chose, each from the first line that states it (the
log formats of vLLM 0.26: docs/engines.md section 1.6)."""
RUNNER_V2 = re.compile(r"Using V2 Model Runner|Loading model from scratch\.\.\.")
RUNNER_V1 = re.compile(r"using the V1 model runner instead|Starting to load model ")
ASYNC_OFF = re.compile(
    r"Async scheduling not supported with (\S+)-based speculative decoding and will be disabled"
)
NUMBERS = (
    "attention_block_size",
    "max_num_batched_tokens",
    "init_engine_s",
    "torch_compile_s",
    "graph_capture_s",
)


def engine_paths(log: str) -> dict[str, Any]:
    """The paths vLLM chose, from its start-up log: attention (and GDN prefill) backend, model runner
    (V1 or V2), asynchronous scheduling, a hybrid model's attention block and Mamba cache mode, the
    chunk budget, CUDA graph and compilation modes, the load format, whether the kernel JIT monitor
    runs, and how long start-up took. A fact the log does not state is left out."""
    facts: dict[str, Any] = {}
    for key, pattern in ENGINE_PATHS.items():
        found = _first(pattern, log)
        if found is not None:
            facts[key] = (
                float(found) if key.endswith("_s") else int(found) if key in NUMBERS else found
            )
    if RUNNER_V2.search(log):
        facts["model_runner"] = "V2"
    elif RUNNER_V1.search(log):
        facts["model_runner"] = "V1"
    off = ASYNC_OFF.search(log)
    if off and "async_scheduling" not in facts:
        facts["async_scheduling"] = "disabled"
    return facts


def _first(pattern: re.Pattern[str], log: str) -> str | None:
    for line in log.splitlines():
        found = pattern.search(line)
        if found:
            return next(g for g in found.groups() if g is not None)
    return None


COMPILE_DURING_WINDOW = re.compile(
    r"JIT compilation during inference|Triton autotuning for function|Autotuning kernel "
)
"""Lines vLLM's kernel JIT monitor writes when a kernel compiles while serving (utils/jit_monitor.py:
"Triton kernel JIT compilation during inference: <kernel>. This causes a latency spike ..."; CuTeDSL and
TileLang alike), and what Triton prints when it autotunes a kernel (the monitor turns that printing on)."""
