"""runtime=sglang: SGLang's server, 0.5.12 (served on an H200 by specexp) to 0.5.23 (facts from
docs/engines.md section 2).

Starts `python -m sglang.launch_server --model-path MODEL --host 127.0.0.1 --port P` with
`--mem-fraction-static`, `--enable-metrics` (no /metrics without it, 2.2) and `--enable-cache-report`
(usage.prompt_tokens_details.cached_tokens, 2.3), plus the drafter's `--speculative-*` flags (2.1),
and `--load-format` with the config-only folder specexp writes for `dummy` (specexp.runtimes.hf_folders).
The version and the resolved drafter shape come from `GET /server_info` (2.4); counters from
`sglang:*` series; prompts are cut and counted with `/tokenize`; the radix cache is emptied with
`/flush_cache`.

Requests: a chat request goes to `/v1/chat/completions`; a completion to the native `/generate`
(specexp.runtimes.sglang.native), whose finished `meta_info` carries the request's speculative counts
in every version. A window's acceptance is the sum of its requests' counts
(specexp.runtimes.sglang.acceptance) where `/metrics` has no speculative counter: 0.5.12 has none,
and its OpenAI endpoints return no per-request counts either, so measure drafting with
`workload.endpoint=completions`.

Where `/metrics` has `sglang:spec_verify_calls_total` (0.5.2x), acceptance is INFERRED from it and
`sglang:generation_tokens_total` (2.2). SGLang's own per-request figure is
`spec_accept_length = completion_tokens / spec_verify_ct` (tokenizer_manager
`_calculate_spec_decoding_metrics`), and every verify pass emits its accepted drafts plus one token
of its own, so completion = verify passes + accepted drafts (the prefill token is the first pass's).
Over a window
  drafts = Δspec_verify_calls, accepted = Δgeneration_tokens - Δspec_verify_calls,
  draft_tokens = drafts x k,
so tokens_per_pass = Δgeneration / Δverify is SGLang's spec_accept_length. (An earlier identity,
completion = 1 + verify + accepted, undercounted accepted by one per request.) These counters move
only when a request finishes, so a window must wait for its requests to end (run_window does).
With several data-parallel ranks the scheduler series carry dp_rank beside tp/pp/moe_ep_rank:
ranks are summed, a figure replicated on the workers of one rank is counted once
(promtext.shard_total).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import httpx

from specexp.measure.events import Counters, EngineInfo, Request, RequestTrace, RuntimeFailure
from specexp.runtimes.base import register
from specexp.runtimes.hf_folders import WrittenHfModel
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream
from specexp.runtimes.http.process import HIGHEST_PORT
from specexp.runtimes.http.server_runtime import HttpRuntime, get, json_of
from specexp.runtimes.http.tokenize import ServerTokenizer
from specexp.runtimes.sglang import native
from specexp.runtimes.sglang.acceptance import window_counts
from specexp.spec.runtime import SglangRuntimeSpec

START_ERROR = re.compile(r"^((?:\w+\.)*\w*(?:Error|Exception): .+)$", re.MULTILINE)
"""The exception line a refused start ends with (e.g. `ValueError: Speculative decoding for ... is not
compatible with radix cache ...`, tests/fixtures/engines/sglang/h200-0.5.12/refused_start.log)."""
COMPILES = re.compile(
    r"Compiling a graph for (?:dynamic shape|shape)|Capture (?:cuda graph|piecewise CUDA graph|draft)"
)
"""What SGLang's log says when it compiles or captures a CUDA graph (model_executor/, compilation/
backend.py). On 0.5.12 these lines come at start-up only; its Triton kernels compile at first use
without a line, so a window's compiles are read from the server's Triton cache instead
(`triton_kernels`; docs/engines.md 2.5)."""
GRPC_PORT_OFFSET = 10000
"""SGLang refuses a --port whose port + 10000 (its gRPC port) passes 65535, even with gRPC off
(docs/engines.md section 2): a server specexp starts gets a port at most 55535."""
CHAIN = {"mtp", "eagle", "eagle3", "draft_model"}
"""Drafters sized by steps/topk/draft-tokens: a chain of k (topk 1, so num_draft_tokens = k + 1)."""


@register(SglangRuntimeSpec)
class SglangRuntime(ServerTokenizer, WrittenHfModel, HttpRuntime[SglangRuntimeSpec]):
    default_port = 30000  # docs/engines.md 2 (serving.py L66)
    highest_port = HIGHEST_PORT - GRPC_PORT_OFFSET
    completion_path = native.PATH
    compile_lines = COMPILES
    triton_kernels = True
    _server_drafter_config: str | None = None
    _incremental: bool = False
    """The server streams only what is new (`--incremental-streaming-output`, read at start)."""

    # -- the server --------------------------------------------------------------------------

    def start(self) -> EngineInfo:
        """HttpRuntime.start; a server that exits before it is ready is refused with SGLang's own
        error as its cause (the exception its argument checks raise)."""
        try:
            return super().start()
        except RuntimeFailure as failure:
            log = failure.log_tail
            if self.process is not None:
                log = self.process.log_path.read_text(encoding="utf-8", errors="replace")
            cause = start_error(log)
            if cause and failure.status == "refused":
                failure.message = f"{failure.message}: {cause[:500]}"
                failure.args = (failure.message,)
            raise

    def build_argv(self, port: int) -> list[str]:
        rt = self.rt
        argv = [
            rt.executable or "python",
            "-m",
            "sglang.launch_server",
            "--model-path",
            self.model_ref(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        # gpu_memory_utilization null: SGLang's own choice (recorded as unknown)
        argv += self.setting_flags(
            {
                "gpu_memory_utilization": "--mem-fraction-static",
                "max_model_len": "--context-length",
                "kv_cache_dtype": "--kv-cache-dtype",
                "quantization": "--quantization",
                "served_model_name": "--served-model-name",
            }
        )
        argv += ["--enable-metrics", "--enable-cache-report"]
        if rt.load_format:
            argv += ["--load-format", rt.load_format]
        if self._writes_model() and not rt.served_model_name:
            argv += ["--served-model-name", self.spec.model.name]  # not the cache directory's path
        if not rt.prefix_caching:
            argv.append("--disable-radix-cache")  # the radix cache is on by default (2.4)
        argv += self._speculative_args()
        return argv + list(rt.extra_args)

    def _speculative_args(self) -> list[str]:
        drafter = self.spec.drafter.name
        drafted = self.engine_drafter("SGLang")
        if drafted is None:
            return []
        algorithm, k = drafted
        args = ["--speculative-algorithm", algorithm]
        draft = self.draft_weights("SGLang")
        if draft is not None:
            args += ["--speculative-draft-model-path", draft]
        if drafter in CHAIN:
            # topk 1: SGLang forces num_draft_tokens = num_steps + 1 (2.1, "3/1/4" for k = 3).
            args += [
                "--speculative-num-steps",
                str(k),
                "--speculative-eagle-topk",
                "1",
                "--speculative-num-draft-tokens",
                str(k + 1),
            ]
        elif drafter == "dflash":
            # Steps and topk are forced to 1; the block (verify window) is num_draft_tokens and
            # includes the anchor slot, so k drafted tokens = block k + 1 (2.1, section 5).
            args += ["--speculative-num-draft-tokens", str(k + 1)]
        elif drafter == "dspark":
            # --speculative-dspark-block-size is gamma, the drafted tokens: num_draft_tokens = k + 1 (2.1).
            args += ["--speculative-dspark-block-size", str(k)]
        elif drafter == "ngram":
            # A chain like the other engines' ngram: breadth 1 (default 10 builds a tree of
            # branches, where k would not be the draft length), k + 1 draft tokens (2.1).
            args += [
                "--speculative-num-draft-tokens",
                str(k + 1),
                "--speculative-ngram-max-bfs-breadth",
                "1",
            ]
        return args

    def planned_drafter_config(self) -> str | None:
        """steps/topk/draft-tokens as this config asks for them (docs/engines.md 2.1)."""
        drafter, k = self.spec.drafter.name, self.spec.k
        if drafter == "none" or k is None or self.rt.drafter_name(drafter) is None:
            return None
        if drafter == "ngram":
            return f"{k + 1}/1/{k + 1}"  # num_steps = num_draft_tokens // topk (2.1, _handle_ngram)
        if drafter in CHAIN:
            return f"{k}/1/{k + 1}"
        return f"1/1/{k + 1}"  # DFLASH, DSPARK force steps = topk = 1

    def drafter_config(self) -> str | None:
        """The `drafter_config` condition, "steps/topk/draft_tokens" (docs/vocabulary.md section 1):
        as the server resolved it (`/server_info`, read at start), else as planned."""
        return self._server_drafter_config or self.planned_drafter_config()

    # -- requests -------------------------------------------------------------------------------
    def body(self, request: Request) -> dict[str, Any]:
        """A chat request's OpenAI body; a completion's native `/generate` body."""
        return super().body(request) if request.chat else native.body(request)

    def stream_chunks(self, raw: RawStream, path: str) -> RawStream:
        return native.as_completion_chunks(raw, self._incremental) if path == native.PATH else raw

    def window_counters(self, delta: Counters, traces: Sequence[RequestTrace]) -> Counters:
        """The speculative counts summed from the window's requests where /metrics has none."""
        if self.spec.drafter.name == "none":
            return delta
        counted = window_counts(delta, traces, self.spec.k)
        if counted.drafts is None and any(t.error is None for t in traces):
            self._note(
                "SGLang reported no speculative counts for these requests (its /metrics has no "
                "speculative counter before 0.5.2x, nor its OpenAI endpoints per-request counts): "
                "acceptance is unknown; workload.endpoint=completions sends them to /generate, "
                "which reports them"
            )
        return counted

    def request_extras(self, request: Request) -> dict[str, Any]:
        """Per-chunk usage, and `return_spec_tokens_details`: its `sglext.spec_tokens_details`
        chunk is the streaming form of meta_info's spec fields (2.3). `return_meta_info` itself is
        refused with HTTP 400 when stream is true (tests/fixtures/engines/sglang/
        stream_return_meta_info_error.json; serving_chat.py `_convert_to_internal_request`)."""
        extras: dict[str, Any] = {
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}
        }
        if self.spec.drafter.name != "none":
            extras["return_spec_tokens_details"] = True
        if request.chat:
            extras["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        return extras

    def stream_details(self, raw: RawStream) -> dict[str, Any]:
        """`sglext.spec_tokens_details` (streaming) and `meta_info` (non-streaming, or
        `choices[].meta_info`) kept as engine timings; token counts from meta_info where it has them."""
        timings: dict[str, Any] = {}
        for _, chunk in raw.chunks:
            ext = chunk.get("sglext")
            if isinstance(ext, dict):
                if isinstance(ext.get("spec_tokens_details"), dict):
                    timings.update(ext["spec_tokens_details"])
                if isinstance(ext.get("cached_tokens_details"), dict):
                    timings["cached_tokens_details"] = ext["cached_tokens_details"]
            choices = [c for c in chunk.get("choices") or [] if isinstance(c, dict)]
            metas = [chunk.get("meta_info")] + [c.get("meta_info") for c in choices]
            for meta in metas:
                if isinstance(meta, dict):
                    timings.update(meta)
        out: dict[str, Any] = {}
        for key in ("completion_tokens", "prompt_tokens", "cached_tokens"):
            if isinstance(timings.get(key), int) and not isinstance(timings.get(key), bool):
                out[key] = timings[key]
        kept = {key: value for key, value in timings.items() if _figure(value)}
        if kept:
            out["engine_timings"] = kept
        return out

    # -- counters and engine facts ---------------------------------------------------------------
    load_metrics = ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:token_usage")

    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        """`sglang:*` series (2.2) summed over their shards (is_streaming, DP ranks); acceptance
        inferred as in the module docstring; the spec gauges (refreshed only every
        --decode-log-interval batches, so never a window's figure) kept in `extra`."""

        def t(name):
            return promtext.shard_total(samples, f"sglang:{name}")

        generation = t("generation_tokens_total")
        verify = t("spec_verify_calls_total")
        k = self.spec.k
        drafts = draft_tokens = accepted = None
        if (
            self.spec.drafter.name != "none"
            and k is not None
            and verify is not None
            and generation is not None
        ):
            drafts = verify
            draft_tokens = verify * k
            accepted = generation - verify
        extra = {
            key: value
            for key, value in (
                ("spec_accept_length", _mean(samples, "sglang:spec_accept_length")),
                ("spec_accept_rate", _mean(samples, "sglang:spec_accept_rate")),
                ("spec_num_steps", _mean(samples, "sglang:spec_num_steps")),
                ("spec_num_draft_tokens", _mean(samples, "sglang:spec_num_draft_tokens")),
                ("cache_hit_rate", _mean(samples, "sglang:cache_hit_rate")),
            )
            if value is not None
        }
        return Counters(
            drafts=drafts,
            draft_tokens=draft_tokens,
            accepted=accepted,
            accepted_per_position=None,  # SGLang has no per-position counters (README, 2.2)
            prompt_tokens=t("prompt_tokens_total"),
            cached_prompt_tokens=cached_tokens(samples),
            generation_tokens=generation,
            extra=extra,
        )

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        info = json_of(get(client, "/server_info"))
        if not isinstance(info, dict):
            info = json_of(get(client, "/get_server_info"))  # deprecated, still served (2.4)
        info = info if isinstance(info, dict) else {}
        self._server_drafter_config = resolved_drafter_config(info)
        self._incremental = info.get("incremental_streaming_output") is True
        if self.rt.url and not self.rt.served_model_name:
            models = json_of(get(client, "/v1/models"))
            cards = models.get("data") if isinstance(models, dict) else None
            if (
                isinstance(cards, list)
                and cards
                and isinstance(cards[0], dict)
                and cards[0].get("id")
            ):
                self._discovered_model = str(cards[0]["id"])
        states = info.get("internal_states")
        state = (
            states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
        )
        keys = (
            "speculative_algorithm",
            "mem_fraction_static",
            "context_length",
            "page_size",
            "disable_radix_cache",
            "enable_cache_report",
            "kv_cache_dtype",
            "quantization",
        )
        details = {key: info.get(key) for key in keys if key in info}
        details["drafter_config"] = self.drafter_config()
        details["served_model"] = self.served_model()
        if "avg_spec_accept_length" in state:
            details["avg_spec_accept_length"] = state["avg_spec_accept_length"]
        capacity = info.get("max_total_num_tokens")
        reported = info.get("version")
        return EngineInfo(
            runtime=self.name,
            version=str(reported) if reported else self.rt.version,
            kv_cache_tokens=int(capacity)
            if isinstance(capacity, (int, float)) and capacity
            else None,
            details=details,
        )

    def reset_prefix_cache(self) -> bool:
        """`POST /flush_cache` (2.4): 200 when the radix cache was flushed. SGLang answers non-200
        and keeps the cache while requests are pending."""
        try:
            with self.sync_client() as client:
                return client.post("/flush_cache").status_code == 200
        except httpx.HTTPError:
            return False


def start_error(log: str) -> str | None:
    """The last exception line of a server log (the one that ended the start), or None."""
    found = START_ERROR.findall(log or "")
    return found[-1].strip() if found else None


def cached_tokens(samples: list[promtext.Sample]) -> float | None:
    """`sglang:cached_tokens_total{cache_source="total"}`, else the sum of its sources
    (device, host, storage; docs/engines.md 2.2)."""
    series = [
        s for s in samples if s.name == "sglang:cached_tokens_total" and "cache_source" in s.labels
    ]
    totals = [s for s in series if s.labels["cache_source"] == "total"]
    return promtext.shard_total(totals or series, "sglang:cached_tokens_total")


def resolved_drafter_config(info: dict[str, Any]) -> str | None:
    """steps/topk/draft_tokens from `/server_info`'s resolved server args; None without an algorithm."""
    algorithm = info.get("speculative_algorithm")
    if not algorithm or str(algorithm).upper() == "NONE":
        return None
    parts = [
        info.get(k)
        for k in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    ]
    if any(not isinstance(p, int) or isinstance(p, bool) for p in parts):
        return None
    return "/".join(str(p) for p in parts)


def _figure(value: Any) -> bool:
    """A number, or a list of numbers (a histogram), and nothing else a server sends (its text, ids
    and nested objects stay out of the record)."""
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value
    )


def _mean(samples: list[promtext.Sample], name: str) -> float | None:
    """A gauge over its label sets (TP/DP ranks report the same figure): the mean, not the sum."""
    values = [s.value for s in samples if s.name == name]
    return sum(values) / len(values) if values else None
