"""Which conditions can move which metric: the data every comparability judgment reads.

A condition counts for a metric only where it can move that metric. The metrics of
docs/vocabulary.md section 2 fall into families (time to first token, prefill, decode,
end-to-end, aggregate, acceptance, ...); each family lists the conditions that can move
its metrics, each with a one-line reason. Nothing else in specexp.check decides relevance:
comparisons, the matching of cited figures to runs and the table checks all ask
`relevant()` here. docs/check.md prints this table (see `relevance_table_md`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from specexp.spec.metric_defs import metrics_of_family
from specexp.spec.vocabulary import CONDITIONS


@dataclass(frozen=True)
class Family:
    """Metrics that the same conditions can move."""

    name: str
    summary: str
    conditions: Mapping[str, str]
    """Condition -> why it can move these metrics (one line)."""

    @property
    def metrics(self) -> tuple[str, ...]:
        """Its metrics: those whose definition names this family (specexp.spec.metric_defs)."""
        return metrics_of_family(self.name)


_DEVICE = {
    "hardware": "memory bandwidth and tensor throughput set the time of every forward pass",
    "gpu_count": "tensor parallelism splits the weights and the bandwidth over devices",
    "tensor_parallel": "each GPU reads and computes its share of every pass, and every layer pays "
    "all-reduces between them",
    "gpu_shared": "another resident engine competes for bandwidth and memory",
    "model": "parameter count and layer shape: the bytes and FLOPs of every pass",
    "quantization": "bytes per weight read every pass, and which kernels run them",
    "kv_cache_dtype": "bytes of KV read per context token, and the attention kernels",
    "runtime": "engines differ in kernels, scheduling and overhead (llama.cpp vs vLLM prefill)",
    "runtime_version": "kernels and bugs change between versions (a prefix cache that never hits)",
}
_PREFILL = {
    "prompt_tokens": "tokens to prefill, and the context attended over",
    "cache": "a warm prefix is served from the cache instead of being computed",
    "prefix_caching": "off, nothing is reused however warm the prompt",
    "concurrency": "requests in flight share the passes (queueing, batched prefill)",
    "request_rate": "open-loop arrivals queue behind each other once the server falls behind",
    "drafter": "a drafter prefills its own layers over the prompt before the first token",
    "turn": "a later turn of a session finds its conversation so far in the prefix cache",
    "send": "a hybrid's cache keeps states only where earlier sends left them: a third send finds more",
}
_SPECULATION = {
    "drafter": "speculative decoding on/off and its method set the tokens emitted per pass",
    "k": "draft length: more tokens per pass when accepted, more work when rejected",
    "drafter_config": "engine drafter shape (steps/topk/draft tokens) beyond k",
    "draft_model": "a different draft model or drafter checkpoint proposes different tokens",
    "workload": "predictability of the text (copying vs fresh text) sets acceptance",
    "thinking": "reasoning streams are harder to predict than answers",
    "temperature": "sampling accepts fewer drafts than greedy decoding",
    "ignore_eos": "text forced past end-of-sequence is a different, often repetitive, stream",
    "output_tokens": "acceptance and context change along the output",
    "prompt_tokens": "what the prompt offers to copy, and the context each step attends over",
    "weights": "random or dummy weights make acceptance meaningless: trained weights only",
    "prompt_text": "random words overstate speculation (SPEED-Bench: about 23 % on throughput)",
}
_DECODE = {
    **_DEVICE,
    **_SPECULATION,
    "concurrency": "streams in flight share every pass: one stream's rate falls as the batch grows",
    "request_rate": "the arrival rate sets how many streams share each pass",
}
_E2E = {
    **_DECODE,
    "cache": "the rate includes the time to first token, which a warm prefix shortens",
    "prefix_caching": "the rate includes the time to first token, which the prefix cache can shorten",
}
_AGGREGATE = {
    **_E2E,
    "gpu_memory_utilization": "KV capacity caps the sequences that run at once (preemption, queueing)",
    "max_model_len": "the KV reserved per request caps how many run at once",
}
_ENERGY = {
    **_AGGREGATE,
    "hardware": "the device's power draw and its rate together set the joules per token",
}
_THINKING = {
    **_E2E,
    "thinking": "whether the model reasons before it answers: its reasoning's length and pace",
}
_COST = {
    **_AGGREGATE,
    "usd_per_gpu_hour": "the price the time is billed at",
}
_ENERGY_COST = {
    **_ENERGY,
    "usd_per_kwh": "the price the energy is billed at",
}
_ACCEPTANCE = {
    "model": "the target decides which drafts are accepted",
    "tensor_parallel": "split matmuls are summed across GPUs and round differently: near-ties, and so drafts accepted, can move",
    "quantization": "the drafter reads the target's states: MTP accepts ~53 % on NVFP4, ~79 % on FP8",
    "kv_cache_dtype": "a lower-precision KV cache perturbs the target's logits",
    "runtime": "engines verify and sample drafts differently (a DFlash drafter at 25 % on vLLM)",
    "runtime_version": "drafter support and rejection sampling change between versions",
    **{k: v for k, v in _SPECULATION.items() if k != "prompt_tokens"},
    "prompt_tokens": "what the prompt offers to copy",
    "concurrency": "engines may turn speculation down under load; batch-variant kernels move ties",
    "category": "acceptance differs by task: translation, summarization, QA, math, code",
    "turn": "a longer conversation offers more to copy (tool results, earlier replies)",
}
_CAPACITY = {
    "hardware": "device memory the KV cache is carved from",
    "gpu_count": "more devices, more memory for KV",
    "tensor_parallel": "each GPU holds its share of the weights and of every token's KV",
    "gpu_shared": "another resident engine holds part of the memory",
    "gpu_memory_utilization": "fraction of device memory the engine may take",
    "model": "weight memory, and KV bytes per token",
    "quantization": "weight memory left over for the KV cache",
    "kv_cache_dtype": "bytes per cached token",
    "runtime": "engines reserve memory differently (activations, CUDA graphs)",
    "runtime_version": "memory accounting changes between versions",
    "drafter": "a drafter's weights and KV take memory from the target's cache",
    "k": "deeper drafts reserve more KV per sequence",
    "drafter_config": "tree drafts reserve more KV per sequence",
    "prefix_caching": "hybrid models need large aligned cache blocks when it is on",
    "draft_model": "a draft model's weights and KV take memory from the target's cache",
    "max_model_len": "an engine refuses to start when one request of this length does not fit",
}
_CACHE = {
    "model": "cache block size (hybrid models align blocks to their layers)",
    "tensor_parallel": "each GPU's share of a token's KV sets how many blocks fit, and so what stays cached",
    "runtime": "what an engine caches and how it reports hits",
    "runtime_version": "a prefix cache broke on one vLLM version and worked on a later one",
    "drafter": "a drafter changes the cache block (~1,600 tokens with MTP vs ~224 without)",
    "workload": "whether requests share a prefix at all",
    "prompt_tokens": "how much prefix there is to reuse",
    "cache": "cold has nothing to reuse, warm has the prefix cached",
    "prefix_caching": "off, nothing is reused",
    "concurrency": "simultaneous requests can miss each other's prefix",
    "turn": "turn 1 finds at most the shared system prompt, later turns their conversation",
    "send": "what a repeat finds depends on where the earlier sends left the engine's saved states",
}
_IDENTITY = {
    "hardware": "kernels differ by architecture, and with them argmax ties",
    "tensor_parallel": "split matmuls are summed across GPUs and round differently, and with them argmax ties",
    "weights": "trained weights have fewer exact ties than random ones",
    "model": "the target whose greedy output must be preserved",
    "quantization": "kernels and scales change the logits",
    "kv_cache_dtype": "a lower-precision KV cache perturbs the logits",
    "runtime": "verification code differs by engine",
    "runtime_version": "verification bugs come and go with versions",
    "drafter": "the method whose exactness is checked",
    "k": "longer drafts verify more tokens in one batched pass",
    "drafter_config": "tree verification differs from chain verification",
    "draft_model": "another draft model changes which tokens are verified, not the output",
    "workload": "some texts have more near-ties than others",
    "output_tokens": "longer outputs have more chances to diverge",
    "thinking": "a different template and stream",
    "temperature": "identity is only defined at temperature 0",
    "concurrency": "batch-variant kernels change the logits with the batch",
}


_SCORES = {
    "model": "the model being scored",
    "tensor_parallel": "split matmuls are summed across GPUs and round differently: an answer can turn on a near-tie",
    "weights": "random or dummy weights score nothing",
    "quantization": "lower-precision weights can lose points",
    "kv_cache_dtype": "a lower-precision KV cache perturbs the logits",
    "runtime": "engines differ in templates, stops and verification",
    "runtime_version": "verification bugs come and go with versions",
    "drafter": "the method whose effect on answers is checked",
    "k": "longer drafts verify more tokens in one batched pass",
    "drafter_config": "tree verification differs from chain verification",
    "task": "a score is of one task",
    "eval_items": "how many items a score is over: its noise",
    "thinking": "reasoning mode changes the answers",
    "temperature": "sampling changes the answers",
    "top_p": "the nucleus sampled from",
}


FAMILIES: Mapping[str, Family] = MappingProxyType(
    {
        f.name: f
        for f in (
            Family(
                "ttft",
                "time to first token",
                MappingProxyType(
                    {
                        **_DEVICE,
                        **_PREFILL,
                        "thinking": "the chat template differs with thinking on, and the first "
                        "token is the reasoning's, not the answer's",
                    }
                ),
            ),
            Family(
                "prefill",
                "prefill throughput",
                MappingProxyType({**_DEVICE, **_PREFILL}),
            ),
            Family(
                "decode",
                "one stream's decode rate after the first token",
                MappingProxyType(_DECODE),
            ),
            Family(
                "e2e",
                "one stream's rate including the first token",
                MappingProxyType(_E2E),
            ),
            Family(
                "aggregate",
                "throughput of concurrent streams, summed or per stream",
                MappingProxyType(_AGGREGATE),
            ),
            Family(
                "energy",
                "GPU energy per token and mean power over a window",
                MappingProxyType(_ENERGY),
            ),
            Family(
                "thinking",
                "a reasoning model's two streams: its reasoning, and the answer after it",
                MappingProxyType(_THINKING),
            ),
            Family(
                "cost",
                "the bill from time: a GPU-hour's price over the tokens served in it",
                MappingProxyType(_COST),
            ),
            Family(
                "energy_cost",
                "the bill from energy: a kWh's price over the tokens its energy served",
                MappingProxyType(_ENERGY_COST),
            ),
            Family(
                "acceptance",
                "how many drafted tokens the target accepts",
                MappingProxyType(_ACCEPTANCE),
            ),
            Family(
                "load",
                "open-loop delivery and SLO scores: the load sent and the share served in time",
                MappingProxyType(_AGGREGATE),
            ),
            Family(
                "capacity",
                "KV cache capacity at start",
                MappingProxyType(_CAPACITY),
            ),
            Family(
                "cache",
                "prompt tokens served from the prefix cache",
                MappingProxyType(_CACHE),
            ),
            Family(
                "identity",
                "greedy output unchanged by speculation",
                MappingProxyType(_IDENTITY),
            ),
            Family(
                "scores",
                "task scores with and without speculation",
                MappingProxyType(_SCORES),
            ),
        )
    }
)

NEVER_RELEVANT: Mapping[str, str] = MappingProxyType(
    {
        "repeats": "more repetitions narrow the spread; they do not move the mean",
        "server_starts": "more fresh server starts widen what the interval covers (a restart's own "
        "move); they do not move the mean",
        "source": "measured, simulated or cited says where a number comes from, not what it measures",
    }
)
"""Conditions that move no metric. They are shown, never compared."""

DEPENDS_ON: Mapping[str, str] = MappingProxyType({"k": "drafter", "drafter_config": "drafter"})
"""A dependent condition is compared only when its parent is equal on both sides: a k of
MTP and a k of DSpark are settings of different methods, and the drafter already differs."""

VARY_IMPLIES: Mapping[str, tuple[str, ...]] = MappingProxyType({"drafter": ("k", "drafter_config")})
"""Varying a condition also varies its settings: `vary: [drafter]` compares drafter arms as
configured, whatever their k."""

SIMULATED_STANDS_IN: Mapping[str, str] = MappingProxyType(
    {
        "runtime": "the simulator models a serving engine's scheduler, not a particular engine",
        "runtime_version": "the simulator has no engine version to match",
    }
)
"""Conditions a simulated run cannot match and stands in for, when matched to a cited figure."""

METRIC_FAMILY: Mapping[str, Family] = MappingProxyType(
    {m: f for f in FAMILIES.values() for m in f.metrics}
)


def relevant(metric: str) -> Mapping[str, str]:
    """Conditions that can move `metric`, each with why."""
    return METRIC_FAMILY[metric].conditions


def relevant_to(metrics: Iterable[str]) -> tuple[str, ...]:
    """Conditions that can move any of `metrics`, in vocabulary order."""
    names = {c for m in metrics if m in METRIC_FAMILY for c in relevant(m)}
    return tuple(c for c in CONDITIONS if c in names)


def expand_vary(vary: Iterable[str]) -> frozenset[str]:
    """`vary` with the conditions it implies (drafter -> k, drafter_config)."""
    out = set(vary)
    for name in list(out):
        out.update(VARY_IMPLIES.get(name, ()))
    return frozenset(out)


def relevance_table_md() -> str:
    """The relevance table as Markdown: one row per condition, one column per family; then
    the metrics of each family, and why each condition counts."""
    names = list(FAMILIES)
    lines = ["| condition | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for cond in CONDITIONS:
        marks = ["✓" if cond in FAMILIES[n].conditions else "" for n in names]
        lines.append(f"| `{cond}` | " + " | ".join(marks) + " |")
    lines.append("")
    lines.append("| family | metrics |")
    lines.append("|---|---|")
    for f in FAMILIES.values():
        lines.append(f"| {f.name} ({f.summary}) | " + ", ".join(f"`{m}`" for m in f.metrics) + " |")
    for f in FAMILIES.values():
        lines += ["", f"**{f.name}**: " + ", ".join(f"`{m}`" for m in f.metrics), ""]
        lines += [f"- `{c}`: {f.conditions[c]}" for c in CONDITIONS if c in f.conditions]
    lines += ["", "**never relevant**", ""]
    lines += [f"- `{c}`: {why}" for c, why in NEVER_RELEVANT.items()]
    return "\n".join(lines) + "\n"
