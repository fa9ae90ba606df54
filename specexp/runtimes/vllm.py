"""runtime=vllm: vLLM 0.33.0's OpenAI-compatible server (facts from engines.md section 1).

Starts `vllm serve MODEL --host 127.0.0.1 --port P` with the memory, context, KV-cache, quantization
and prefix-cache settings of the runtime config, `--enable-prompt-tokens-details` (so usage carries
`prompt_tokens_details.cached_tokens`, engines.md 1.4) and the drafter as one
`--speculative-config` JSON object (engines.md 1.1). Readiness is `GET /health` 200, the version is
`GET /version` (1.3), counters are the `vllm:*` series of `/metrics` summed over the `engine` label
(1.2), the KV capacity is `vllm:cache_config_info` num_gpu_blocks x block_size, token counts come
from `/tokenize`, and the prefix cache is emptied with `POST /reset_prefix_cache`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from specexp.events import Counters, EngineInfo, Request
from specexp.runtimes import promtext
from specexp.runtimes.base import RUNTIMES, RuntimeFailure
from specexp.runtimes.client import RawStream
from specexp.runtimes.http import HttpRuntime, get, json_of

METHODS = {
    "mtp": "mtp",
    "dspark": "dspark",
    "dflash": "dflash",
    "eagle3": "eagle3",
    "eagle": "eagle",
    "ngram": "ngram",
    "draft_model": "draft_model",
    "suffix": "suffix",
}
"""drafter -> `SpeculativeConfig.method` (the SpeculativeMethod Literal of 0.33.0, engines.md 1.1)."""

NEEDS_DRAFT = {"eagle", "eagle3", "dflash", "draft_model"}
"""Methods whose drafter weights are a separate checkpoint (`"model"` in the JSON). `mtp` drafts with
the target checkpoint itself and `dspark` may be bundled in it (engines.md 1.1, section 5), so for
those `"model"` is sent only when runtime.draft_model_path is set; `ngram` and `suffix` need none."""

NGRAM_LOOKUP = (2, 5)
"""prompt_lookup_min / prompt_lookup_max for ngram: the values of engines.md 1.1's example command
(vLLM's own default when both are omitted is 5 / 5)."""

DEV_MODE_ENV = "VLLM_SERVER_DEV_MODE"
"""`/reset_prefix_cache` is mounted only when this is set: `attach_router` in
vllm/entrypoints/serve/cache/api_router.py (vllm-project/vllm @708d0f28, read with the code index;
engines.md is silent on it)."""


@RUNTIMES.register("vllm")
class VllmRuntime(HttpRuntime):
    name = "vllm"
    default_port = 8000  # engines.md 1.3

    # -- the server --------------------------------------------------------------------------
    def build_argv(self, port: int) -> list[str]:
        spec, rt = self.spec, self.spec.runtime
        argv = [rt.executable or "vllm", "serve", self.model_ref(), "--host", "127.0.0.1", "--port", str(port)]
        if rt.gpu_memory_utilization is not None:  # null: vLLM's own default (recorded as unknown)
            argv += ["--gpu-memory-utilization", str(rt.gpu_memory_utilization)]
        argv += ["--max-num-seqs", str(rt.max_num_seqs), "--max-num-batched-tokens", str(rt.max_num_batched_tokens)]
        if rt.max_model_len is not None:
            argv += ["--max-model-len", str(rt.max_model_len)]
        if rt.kv_cache_dtype != "auto":
            argv += ["--kv-cache-dtype", rt.kv_cache_dtype]
        quantization = spec.quantization.engine_names.get("vllm")
        if quantization:
            argv += ["--quantization", quantization]
        # 0.33.0 resolves the default to "on" for generate models; say it either way (engines.md 1.5).
        argv.append("--enable-prefix-caching" if rt.prefix_caching else "--disable-prefix-caching")
        argv.append("--enable-prompt-tokens-details")
        if rt.served_model_name:
            argv += ["--served-model-name", rt.served_model_name]
        config = self.speculative_config()
        if config is not None:
            argv += ["--speculative-config", json.dumps(config)]
        return argv + list(rt.extra_args)

    def speculative_config(self) -> dict[str, Any] | None:
        """The `--speculative-config` object of the drafter (None without one)."""
        spec = self.spec
        drafter = spec.drafter.name
        drafted = self.engine_drafter(METHODS, "vLLM")
        if drafted is None:
            return None
        method, k = drafted
        config: dict[str, Any] = {"method": method, "num_speculative_tokens": k}
        draft = spec.runtime.draft_model_path
        if drafter == "draft_model" and draft is None and spec.draft_model is not None:
            draft = spec.draft_model.hf_id
        if drafter in NEEDS_DRAFT and draft is None:
            raise RuntimeFailure(
                "refused", "missing_model", f"drafter={drafter} on vLLM needs runtime.draft_model_path",
            )
        if draft is not None and drafter in NEEDS_DRAFT | {"dspark"}:
            config["model"] = draft
        if drafter == "ngram":
            config["prompt_lookup_min"], config["prompt_lookup_max"] = NGRAM_LOOKUP
        return config

    def server_env(self, port: int) -> dict[str, str]:
        """Environment of the started server: dev mode, for `POST /reset_prefix_cache`.

        Used once HttpRuntime.start passes it to ServerProcess (the base change proposed with
        this module); dev mode only mounts extra endpoints and changes nothing that is measured."""
        return {DEV_MODE_ENV: "1"}

    # -- requests -------------------------------------------------------------------------------
    def request_extras(self, request: Request) -> dict[str, Any]:
        # continuous_usage_stats puts the cumulative completion count on every chunk, so a chunk
        # that carries several accepted tokens is counted as such (engines.md 1.4).
        extras: dict[str, Any] = {"stream_options": {"include_usage": True, "continuous_usage_stats": True}}
        if request.chat:
            extras["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        return extras

    def stream_details(self, raw: RawStream) -> dict[str, Any]:
        """vLLM's per-request `metrics` object (with --enable-per-request-metrics or
        --per-request-spec-decode-metrics; it rides on the final usage chunk, engines.md 1.4)."""
        for _, chunk in reversed(raw.chunks):
            metrics = chunk.get("metrics")
            if isinstance(metrics, dict):
                return {"engine_timings": metrics}
        return {}

    # -- counters and engine facts ---------------------------------------------------------------
    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        """`vllm:*` series (engines.md 1.2), summed over `engine` (DP ranks). Spec-decode series
        exist only with a speculative config, so without one those counters are None."""
        t = lambda name: promtext.total(samples, f"vllm:{name}")  # noqa: E731
        drafts = t("spec_decode_num_drafts_total")
        cached = t("prompt_tokens_cached_total")
        if cached is None:
            cached = t("prefix_cache_hits_total")
        extra = {
            key: value for key, value in (
                ("prefix_cache_queries_total", t("prefix_cache_queries_total")),
                ("prefix_cache_hits_total", t("prefix_cache_hits_total")),
                ("num_preemptions_total", t("num_preemptions_total")),
                ("kv_cache_usage_perc", _mean(samples, "vllm:kv_cache_usage_perc")),
            ) if value is not None
        }
        return Counters(
            drafts=drafts,
            draft_tokens=t("spec_decode_num_draft_tokens_total"),
            accepted=t("spec_decode_num_accepted_tokens_total"),
            accepted_per_position=self._per_position(samples) if drafts is not None else None,
            prompt_tokens=t("prompt_tokens_total"),  # includes cached prompt tokens (= prefix_cache_queries)
            cached_prompt_tokens=cached,
            generation_tokens=t("generation_tokens_total"),
            extra=extra,
        )

    def _per_position(self, samples: list[promtext.Sample]) -> tuple[float, ...] | None:
        """Label `position` = 0..k-1; vLLM creates every child at start-up, padding to k is only a
        safeguard."""
        found = promtext.positions(samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total")
        if found is None:
            return None
        k = self.spec.k or len(found)
        return tuple(found) + (0.0,) * max(0, k - len(found))

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        version = json_of(get(client, "/version"))
        models = json_of(get(client, "/v1/models"))
        cards = models.get("data") if isinstance(models, dict) else None
        card = cards[0] if isinstance(cards, list) and cards and isinstance(cards[0], dict) else {}
        if self.spec.runtime.url and not self.spec.runtime.served_model_name and card.get("id"):
            self._discovered_model = str(card["id"])
        details: dict[str, Any] = {"served_model": self.served_model(), "max_model_len": card.get("max_model_len")}
        kv_tokens = None
        metrics = get(client, self.metrics_path or "/metrics")
        if metrics is not None and metrics.status_code == 200:
            try:
                samples = promtext.parse(metrics.text)
            except ValueError:
                samples = []
            kv_tokens, cache = cache_config(samples)
            details.update(cache)
            details["spec_decode_metrics"] = promtext.total(samples, "vllm:spec_decode_num_drafts_total") is not None
        reported = version.get("version") if isinstance(version, dict) else None
        return EngineInfo(
            runtime=self.name,
            version=str(reported) if reported else self.spec.runtime.version,
            kv_cache_tokens=kv_tokens,
            details=details,
        )

    # -- tokenizer and cache ---------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int] | None:
        """`POST /tokenize {"model", "prompt"}` -> `{"count", "max_model_len", "tokens"}`
        (vllm/entrypoints/serve/tokenize/protocol.py, TokenizeCompletionRequest/TokenizeResponse;
        engines.md is silent). Special tokens are left out, as llama.cpp's adapter does."""
        data = self._post("/tokenize", {"model": self.served_model(), "prompt": text, "add_special_tokens": False})
        if isinstance(data, dict) and isinstance(data.get("tokens"), list):
            return [int(t) for t in data["tokens"]]
        return None

    def detokenize(self, tokens: list[int]) -> str | None:
        """`POST /detokenize {"model", "tokens"}` -> `{"prompt"}` (same protocol module)."""
        data = self._post("/detokenize", {"model": self.served_model(), "tokens": tokens})
        return str(data["prompt"]) if isinstance(data, dict) and "prompt" in data else None

    def reset_prefix_cache(self) -> bool:
        """`POST /reset_prefix_cache`: True on 200. The route exists only with VLLM_SERVER_DEV_MODE
        (404 otherwise: False). vLLM does not pass on whether the block pool agreed (it refuses
        while a request holds blocks, "Failed to reset prefix cache" in the server log), so call
        it between windows, when nothing runs."""
        try:
            with self.sync_client() as client:
                return client.post("/reset_prefix_cache").status_code == 200
        except httpx.HTTPError:
            return False

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            with self.sync_client() as client:
                return json_of(client.post(path, json=body))
        except httpx.HTTPError:
            return None


def cache_config(samples: list[promtext.Sample]) -> tuple[int | None, dict[str, Any]]:
    """KV capacity in tokens (Σ over engines of num_gpu_blocks x block_size) and the cache facts
    of `vllm:cache_config_info` (an info-style gauge whose labels are CacheConfig fields, 1.2)."""
    infos = [s.labels for s in samples if s.name == "vllm:cache_config_info"]
    if not infos:
        return None, {}
    total = 0
    for labels in infos:
        blocks, size = _int(labels.get("num_gpu_blocks")), _int(labels.get("block_size"))
        if blocks is None or size is None:
            return None, _cache_facts(infos[0])
        total += blocks * size
    return total, _cache_facts(infos[0])


def _cache_facts(labels: dict[str, str]) -> dict[str, Any]:
    keys = ("block_size", "num_gpu_blocks", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization")
    return {"cache_config": {k: labels[k] for k in keys if k in labels}}


def _mean(samples: list[promtext.Sample], name: str) -> float | None:
    values = [s.value for s in samples if s.name == name]
    return sum(values) / len(values) if values else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
