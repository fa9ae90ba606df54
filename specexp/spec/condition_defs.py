"""The conditions of docs/vocabulary.md section 1, each defined once: its type, its role (what part of
an experiment it describes), the values it accepts and how closely two values must agree to count as
the same. specexp.spec.vocabulary reads them from here and holds the rules built on them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

Role = Literal["setup", "drafter", "workload", "sampling", "provenance"]
ROLES: tuple[Role, ...] = ("setup", "drafter", "workload", "sampling", "provenance")


@dataclass(frozen=True)
class Condition:
    name: str
    type: type
    role: Role
    meaning: str
    minimum: float | None = None
    """Smallest accepted value of a numeric condition."""
    maximum: float | None = None
    tolerance: float = 1e-9
    """Relative difference within which two numeric values are the same."""
    options: str | None = None
    """Where the accepted values come from: a `conf/` group, or a closed list (see `accepted`)."""
    baseline_may_differ: bool = False
    """A run and its drafter=none baseline may differ in this without being incomparable."""
    absent_is_null: bool = False
    """Added after records of this schema were written: a record without it reads it as null."""


def _c(name: str, kind: type, role: Role, meaning: str, **extra: Any) -> Condition:
    return Condition(name, kind, role, meaning, **extra)


CONDITIONS: Mapping[str, Condition] = MappingProxyType(
    {
        c.name: c
        for c in (
            _c("hardware", str, "setup", "device id from conf/hardware/", options="conf"),
            _c(
                "gpu_count",
                int,
                "setup",
                "accelerators used by the server (0: a CPU-only server)",
                minimum=0,
            ),
            _c(
                "gpu_shared",
                bool,
                "setup",
                "other engines resident on the same device while measuring",
            ),
            _c(
                "gpu_memory_utilization",
                float,
                "setup",
                "fraction of device memory the engine may take; null for "
                "engines without such a setting",
                minimum=0,
                maximum=1,
            ),
            _c(
                "tensor_parallel",
                int,
                "setup",
                "GPUs the model is split over, tensor-parallel (runtime.tensor_parallel: vLLM "
                "--tensor-parallel-size, SGLang --tp); null in records written before it was recorded",
                minimum=1,
                absent_is_null=True,
            ),
            _c(
                "usd_per_gpu_hour",
                float,
                "setup",
                "the price of an hour of one GPU (of the whole server, for a CPU-only one) the "
                "user set (hardware.usd_per_gpu_hour), in US dollars; null: none given",
                minimum=0,
                absent_is_null=True,
            ),
            _c(
                "usd_per_kwh",
                float,
                "setup",
                "the price of a kWh the user set (hardware.usd_per_kwh), in US dollars; null: "
                "none given",
                minimum=0,
                absent_is_null=True,
            ),
            _c("model", str, "setup", "target model id from conf/model/", options="conf"),
            _c(
                "quantization",
                str,
                "setup",
                "weight scheme from conf/quantization/",
                options="conf",
            ),
            _c(
                "weights",
                str,
                "setup",
                "what the weights are: trained (a real checkpoint), random (specexp's generated "
                "tiny models) or dummy (shapes without weights: runtime.load_format=dummy); "
                "acceptance and answers mean something on trained weights only",
                options="weights",
                absent_is_null=True,
            ),
            _c("kv_cache_dtype", str, "setup", "KV cache element type"),
            _c(
                "max_model_len",
                int,
                "setup",
                "longest request the server accepts (runtime.max_model_len, else the "
                "model's native context)",
                minimum=1,
            ),
            _c(
                "runtime",
                str,
                "setup",
                "the engine serving the model, or the simulator: one of the runtimes of the runtime table (section 5)",
                options="runtime",
            ),
            _c(
                "runtime_version",
                str,
                "setup",
                "version string reported by the engine itself",
                baseline_may_differ=True,
            ),
            _c(
                "drafter",
                str,
                "drafter",
                "none, mtp, dspark, dflash, eagle3, eagle, ngram, draft_model, suffix",
                options="drafter",
            ),
            _c(
                "k",
                int,
                "drafter",
                "draft tokens proposed per step; null when drafter is none",
                minimum=1,
            ),
            _c(
                "drafter_config",
                str,
                "drafter",
                "engine-specific drafter shape where k alone does not say it",
            ),
            _c(
                "draft_model",
                str,
                "drafter",
                "the separate draft model or drafter weights (a conf/model id, or "
                "runtime.draft_model_path); null when the drafter has none of its own",
            ),
            _c(
                "workload",
                str,
                "workload",
                "workload id with its version (edit_heavy@1)",
                options="conf",
            ),
            _c(
                "prompt_tokens",
                int,
                "workload",
                "prompt length in the target model's own tokens, as counted by the server",
                minimum=1,
                tolerance=0.02,
                baseline_may_differ=True,
            ),
            _c("output_tokens", int, "workload", "requested max_tokens", minimum=1),
            _c("ignore_eos", bool, "workload", "generation forced to output_tokens"),
            _c("concurrency", int, "workload", "requests in flight at once", minimum=1),
            _c(
                "request_rate",
                float,
                "workload",
                "open-loop requests per second (workload.request_rate); null for "
                "closed-loop bursts",
                minimum=0,
                absent_is_null=True,
            ),
            _c(
                "cache",
                str,
                "workload",
                "cold (no reusable prefix cached) or warm (prefix already cached)",
                options="cache",
            ),
            _c(
                "turn",
                int,
                "workload",
                "turn of an agentic session (1-based: the first message); null outside sessions",
                minimum=1,
                absent_is_null=True,
            ),
            _c(
                "send",
                int,
                "workload",
                "the n-th send of a shared prefix (1-based: 1 is the first, cold; workload.cache "
                "[cold, warm, warm] sends it three times); null where requests share no prefix",
                minimum=1,
                absent_is_null=True,
            ),
            _c(
                "category",
                str,
                "workload",
                "prompt category of a dataset file (workload.dataset_file); null outside datasets",
                absent_is_null=True,
            ),
            _c(
                "task",
                str,
                "workload",
                "the evaluation task a score is on (workload.task.name: an lm-eval task); null "
                "outside task scores",
                absent_is_null=True,
            ),
            _c(
                "eval_items",
                int,
                "workload",
                "items a task score is over (GSM8K's test set: 1,319); null outside task scores",
                minimum=1,
                absent_is_null=True,
            ),
            _c(
                "prompt_text",
                str,
                "workload",
                "what the prompts are made of: real (written prose and code: the workload's "
                "instruction, a real source file, real prose) or random (generated words, which "
                "overstate speculation: workload.material=filler)",
                options="prompt_text",
                absent_is_null=True,
            ),
            _c("prefix_caching", bool, "setup", "the engine's prefix cache is enabled"),
            _c("thinking", bool, "sampling", "reasoning mode of the chat template on"),
            _c("temperature", float, "sampling", "sampling temperature", minimum=0),
            _c(
                "top_p",
                float,
                "sampling",
                "nucleus sampling: the probability mass drawn from (1: all)",
                minimum=0,
                maximum=1,
                absent_is_null=True,
            ),
            _c(
                "repeats",
                int,
                "provenance",
                "independent repetitions behind the figure (timed windows, over every server start)",
                minimum=1,
                baseline_may_differ=True,
            ),
            _c(
                "server_starts",
                int,
                "provenance",
                "fresh server starts the repetitions ran on (workload.server_starts; 1: all on one "
                "server); null in records written before it was recorded",
                minimum=1,
                baseline_may_differ=True,
                absent_is_null=True,
            ),
            _c("source", str, "provenance", "measured, simulated or cited", options="source"),
        )
    }
)
"""Every condition, in the order records and reports list them."""
