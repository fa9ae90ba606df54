"""/metrics: the engine's counters in vLLM's Prometheus names, rendered by prometheus_client.

Names and labels as vLLM V1 exports them (labels `model_name`, `engine`; per-position counters
add `position` = "0".."k-1"). The spec-decode families appear only with a drafter, as in vLLM.
`vllm:prompt_tokens_total` counts every prompt token of admitted requests, cached or not (vLLM's
meaning); `vllm:prefix_cache_queries_total` / `_hits_total` count prompt tokens looked up in and
served from the prefix cache (zero with prefix caching off).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from specexp.simserve.realtime import RealTimeEngine

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class EngineCollector(Collector):
    def __init__(self, engine: RealTimeEngine, model_name: str) -> None:
        self.engine = engine
        self.labels = {"model_name": model_name, "engine": "0"}
        self.created = time.time()

    def _counter(self, name: str, doc: str, value: float) -> CounterMetricFamily:
        family = CounterMetricFamily(name, doc, labels=list(self.labels))
        family.add_metric(list(self.labels.values()), value, created=self.created)
        return family

    def _gauge(self, name: str, doc: str, value: float) -> GaugeMetricFamily:
        family = GaugeMetricFamily(name, doc, labels=list(self.labels))
        family.add_metric(list(self.labels.values()), value)
        return family

    def collect(self) -> Iterator[Metric]:
        e = self.engine
        c = e.sim.counts
        yield self._gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches.", e.running
        )
        yield self._gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", e.waiting
        )
        yield self._counter(
            "vllm:prompt_tokens",
            "Number of prefill tokens processed.",
            c.prompt_tokens + c.cached_prompt_tokens,
        )
        yield self._counter(
            "vllm:generation_tokens", "Number of generation tokens processed.", c.generation_tokens
        )
        yield self._counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            c.prefix_queries,
        )
        yield self._counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            c.cached_prompt_tokens,
        )
        info = GaugeMetricFamily(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            labels=["block_size", "enable_prefix_caching", "num_gpu_blocks"],
        )
        info.add_metric([str(e.block), str(e.prefix_caching), str(e.cache_blocks)], 1.0)
        yield info
        success = CounterMetricFamily(
            "vllm:request_success",
            "Count of successfully processed requests.",
            labels=[*self.labels, "finished_reason"],
        )
        success.add_metric([*self.labels.values(), "length"], c.finished, created=self.created)
        yield success
        if e.k > 0:
            yield self._counter(
                "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", c.drafts
            )
            yield self._counter(
                "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", c.draft_tokens
            )
            yield self._counter(
                "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", c.accepted
            )
            per_pos = CounterMetricFamily(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                labels=[*self.labels, "position"],
            )
            for i, value in enumerate(c.per_position):
                per_pos.add_metric([*self.labels.values(), str(i)], value, created=self.created)
            yield per_pos


class Exporter:
    """One registry per server; `render()` is the body of GET /metrics."""

    def __init__(self, engine: RealTimeEngine, model_name: str) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(EngineCollector(engine, model_name))

    def render(self) -> bytes:
        return generate_latest(self.registry)
