"""The runtimes specexp drives, in one place: each one's name, its settings and its drafters.

Every runtime is one settings model here: the keys its config (conf/runtime/<name>.yaml) may set,
the drafters it has with the engine's own name for each, and the module that drives it. The
`runtime` of an experiment is one of them, chosen by `name`: `runtime=vllm` accepts vLLM's keys
only, and an unknown key is answered with the ones it has. The accepted names, the config check
and the docs' runtime table (scripts/vocabulary-tables) are all read from `RUNTIMES` below; the
runtime modules (specexp.runtimes.*) read their drafter names from here and add the launch argv,
readiness and counters of their engine.

The engines' names for drafters are their own (docs/engines.md): vLLM's `SpeculativeConfig.method`
(1.1), SGLang's `--speculative-algorithm` (2.1), llama.cpp's `--spec-type` (3.1) and what Ollama's
runner wires up (4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, field_validator

from specexp.spec.model_base import _Spec


class RuntimeSpec(_Spec):
    """What every runtime has: the serving settings a simulated or a real engine is measured under."""

    drafters: ClassVar[Mapping[str, str] | None] = None
    """Drafter -> the engine's own name for it; None: any drafter (the simulator imitates each one;
    an endpoint runs whatever its server was started with)."""
    module: ClassVar[str]
    """The module that drives it (it registers the runtime class on import)."""
    summary: ClassVar[str]
    simulated: ClassVar[bool] = False
    """Whether it answers from the simulator, not from an engine serving a model."""
    batch_variant_why: ClassVar[str] = ""
    """Why the engine's greedy output can change with drafting although its verification is exact
    (the report says it beside a workload whose output differed); "" where specexp knows no reason."""

    name: str
    version: str | None = None
    """Engine version to record when the engine does not report one (sim: specexp's)."""
    gpu_memory_utilization: float | None = Field(default=0.9, gt=0, le=1)
    """Share of device memory the engine may take (vLLM --gpu-memory-utilization, SGLang
    --mem-fraction-static); null for engines without such a setting (llama.cpp, Ollama, an
    external endpoint), so the record does not claim one."""
    kv_cache_dtype: str = "auto"
    prefix_caching: bool = True
    max_model_len: int | None = None
    max_num_batched_tokens: int = Field(default=8192, ge=1)
    """Token budget of one forward pass (chunked prefill)."""
    max_num_seqs: int = Field(default=256, ge=1)
    tensor_parallel: int = Field(default=1, ge=1, exclude_if=lambda v: v == 1)
    """GPUs the model is split over, tensor-parallel (vLLM --tensor-parallel-size, SGLang --tp; the
    simulator splits its passes and prices the all-reduces on the hardware's interconnect). Needs
    hardware.gpu_count GPUs at least and an interconnect. Left out of run ids at 1."""
    cache_block_tokens: int | None = Field(default=None, ge=1)
    """Prefix-cache block size in tokens; None: the engine's choice for the model (16 for dense
    models, the model's aligned block for hybrid ones). Reuse happens in whole blocks."""
    served_model_name: str | None = None
    """The model name requests carry; None means what the server was started with."""

    tensor_parallel_flag: ClassVar[str | None] = None
    """The engine's flag for `tensor_parallel`; None: the engine cannot split a model (1 only), or
    the simulator, which splits it itself (`simulated`)."""
    drafts_from: ClassVar[tuple[int, ...] | None] = None
    """The first version of the engine that drafts at all; None: every version specexp knows."""
    drafting_since_why: ClassVar[str] = ""
    """What an older version lacks, in a few words, for the refusal."""

    def drafter_name(self, drafter: str) -> str | None:
        """The engine's name for `drafter`; None where this runtime has no such drafter."""
        if self.drafters is None:
            return drafter
        return self.drafters.get(drafter)

    @classmethod
    def version_refusal(cls, drafter: str, version: str | None) -> str | None:
        """Why the engine at `version` cannot run `drafter` (None: it can, or the version is
        unknown or not a number)."""
        numbers = version_numbers(version) if version else None
        if drafter == "none" or cls.drafts_from is None or numbers is None:
            return None
        if numbers >= cls.drafts_from:
            return None
        since = ".".join(str(n) for n in cls.drafts_from)
        return (
            f"{cls.summary.split(' (')[0]} {version} {cls.drafting_since_why}: "
            f"drafter={drafter} needs {since} or later (docs/engines.md)"
        )


def version_numbers(version: str) -> tuple[int, ...] | None:
    """`0.24.0` -> (0, 24, 0); a pre-release keeps its numbers (0.33.0-rc2 -> (0, 33, 0)); None
    for a version that does not start with a number."""
    found = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(n) for n in found.group(1).split(".")) if found else None


class SimRuntimeSpec(RuntimeSpec):
    module = "specexp.runtimes.sim.driver"
    simulated = True
    default_engine: ClassVar[str] = "vllm"
    """The engine profile the simulator imitates when `engine` is not set (conf/sim_engine/)."""
    summary = (
        "the built-in simulator: an engine's serving on a virtual clock, from first principles"
    )

    name: Literal["sim"] = "sim"
    engine: Literal["vllm", "sglang", "llamacpp"] | None = None
    """The engine the simulator imitates (its profile, conf/sim_engine/); None: vllm."""
    cuda_graph_max_tokens: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    """The largest step the imitated engine runs from a CUDA graph, for an engine whose profile has
    such a limit (vLLM: `--compilation-config.max_cudagraph_capture_size`); None: the profile's
    (vLLM's default, 512 tokens). A step of more tokens runs kernel by kernel."""
    prefix_cache_broken_versions: list[str] = []
    """Versions of the imitated engine (fnmatch patterns, against runtime.version) whose prefix cache
    silently never hits: it is on and costs KV capacity, but nothing is reused."""
    toy_sampler: Literal["lossless", "accept_greedy", "skew"] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    """For testing the answer checks only: the simulator's completions are drawn from a toy
    sampling model (specexp.sim.toy_sampler), honestly (`lossless`) or with a planted fault; its text
    means nothing. None: the simulator generates no text, and the answer checks are refused."""


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


class EndpointRuntimeSpec(RuntimeSpec):
    """An OpenAI-compatible HTTP server, started by specexp or already running."""

    url: str | None = None
    """Measure an already running server at this base URL instead of starting one."""
    start_timeout_s: float = Field(default=600.0, gt=0)
    request_timeout_s: float = Field(default=600.0, gt=0)
    """Longest a whole request may take."""
    stall_timeout_s: float = Field(default=120.0, gt=0)
    """Longest wait for the next chunk of a stream before the request counts as hung."""
    api_key_env: str | None = None
    """Name of the environment variable holding an API key; the key itself is never recorded."""


class ServerRuntimeSpec(EndpointRuntimeSpec):
    """An engine whose server specexp starts itself."""

    executable: str | None = None
    """Path of the server binary; None means the runtime's default."""
    model_path: str | None = None
    """What the server loads: a local path or an engine model id; None means model.hf_id
    (or the model specexp writes for a generated model)."""
    draft_model_path: str | None = None
    """The drafter's weights where the engine needs them (draft model, DFlash, DSpark, EAGLE-3)."""
    extra_args: list[Annotated[str, BeforeValidator(str)]] = []
    """Extra argv appended to the server command, verbatim (a list, never a shell string)."""
    env: Annotated[
        dict[str, Annotated[str, BeforeValidator(str)]], BeforeValidator(lambda v: v or {})
    ] = {}
    """Environment variables the started server gets besides specexp's own (SGLang's
    SGLANG_ENABLE_SPEC_V2=1, say), which win where both set one (Ollama's OLLAMA_HOST is specexp's).
    They are recorded with the config, so never a secret: an API key goes through api_key_env."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not ENV_NAME.fullmatch(name):
                raise ValueError(
                    f"{name!r} is not an environment variable name (letters, digits and _, "
                    "not starting with a digit)"
                )
            if SECRET_NAME.search(name):
                raise ValueError(
                    f"{name} names a secret, which the records would keep: put it in an environment "
                    "variable of your own and name that in runtime.api_key_env"
                )
        return value


class VllmRuntimeSpec(ServerRuntimeSpec):
    module = "specexp.runtimes.vllm.driver"
    summary = "vLLM's OpenAI-compatible server (`vllm serve`)"
    drafters = MappingProxyType(
        {
            "mtp": "mtp",
            "dspark": "dspark",
            "dflash": "dflash",
            "eagle3": "eagle3",
            "eagle": "eagle",
            "ngram": "ngram",
            "draft_model": "draft_model",
            "suffix": "suffix",
        }
    )

    batch_variant_why = (
        "vLLM verifies a draft as one batched pass of k + 1 tokens, and on the CPU its kernels "
        "round that batch differently from a one-token step, so near-ties in the target's logits can "
        "flip (docs/engines.md 7.2)"
    )

    tensor_parallel_flag = "--tensor-parallel-size"

    name: Literal["vllm"] = "vllm"
    kv_cache_memory_gib: float | None = Field(default=None, gt=0)
    """KV cache memory the engine allocates, GiB (--kv-cache-memory-bytes; on hardware=cpu
    VLLM_CPU_KVCACHE_SPACE); None: the engine's own sizing."""
    load_format: str | None = None
    """How the engine loads the weights (`--load-format`); `dummy` serves the model without its
    weights, filled by the engine, from a config-only folder specexp writes for the model's shape
    when runtime.model_path is not given. None: the engine's default."""


class SglangRuntimeSpec(ServerRuntimeSpec):
    module = "specexp.runtimes.sglang.driver"
    summary = "SGLang's server (`python -m sglang.launch_server`)"
    drafters = MappingProxyType(
        {
            "mtp": "NEXTN",
            "eagle": "EAGLE",
            "eagle3": "EAGLE3",
            "draft_model": "STANDALONE",
            "dflash": "DFLASH",
            "dspark": "DSPARK",
            "ngram": "NGRAM",
        }
    )

    tensor_parallel_flag = "--tp"

    name: Literal["sglang"] = "sglang"
    load_format: str | None = None
    """How the engine loads the weights (`--load-format`; `dummy`: no weights, as for vLLM)."""


class LlamacppRuntimeSpec(ServerRuntimeSpec):
    module = "specexp.runtimes.llamacpp.driver"
    summary = "llama.cpp's `llama-server`"
    drafters = MappingProxyType(
        {
            "draft_model": "draft-simple",
            "mtp": "draft-mtp",
            "dflash": "draft-dflash",
            "dspark": "draft-dspark",
            "eagle3": "draft-eagle3",
            "ngram": "ngram-simple",
        }
    )

    batch_variant_why = (
        "llama.cpp verifies a draft as one batch of k + 1 tokens, and its CPU kernels "
        "round a batch differently from one token at a time, so near-ties in the target's logits can "
        "flip (docs/engines.md 7.4)"
    )

    name: Literal["llamacpp"] = "llamacpp"


class OllamaRuntimeSpec(ServerRuntimeSpec):
    module = "specexp.runtimes.ollama.driver"
    summary = "Ollama (`ollama serve`; its settings are environment variables)"
    drafters = MappingProxyType({"mtp": "mtp", "dflash": "dflash", "draft_model": "draft_model"})
    drafts_from = (0, 30)  # its GGUF runner is llama-server from 0.30 (docs/engines.md 4, 4.1)
    drafting_since_why = (
        "drafts nothing for GGUF models (its ggml runner has no draft path; MTP and draft "
        "models run only in its experimental MLX runner, not in a CPU or CUDA build)"
    )

    name: Literal["ollama"] = "ollama"


class OpenaiRuntimeSpec(EndpointRuntimeSpec):
    module = "specexp.runtimes.openai.driver"
    summary = "any OpenAI-compatible endpoint already running (runtime.url); nothing is started"

    name: Literal["openai"] = "openai"


RUNTIMES: Mapping[str, type[RuntimeSpec]] = MappingProxyType(
    {
        cls.model_fields["name"].default: cls
        for cls in (
            SimRuntimeSpec,
            VllmRuntimeSpec,
            SglangRuntimeSpec,
            LlamacppRuntimeSpec,
            OllamaRuntimeSpec,
            OpenaiRuntimeSpec,
        )
    }
)
"""Every runtime by name, in the order the docs list them."""

AnyRuntime = Annotated[
    SimRuntimeSpec
    | VllmRuntimeSpec
    | SglangRuntimeSpec
    | LlamacppRuntimeSpec
    | OllamaRuntimeSpec
    | OpenaiRuntimeSpec,
    Field(discriminator="name"),
]
"""An experiment's runtime: one of `RUNTIMES`, chosen by its `name`."""

EVERY_KEY: tuple[str, ...] = tuple(
    dict.fromkeys(k for cls in RUNTIMES.values() for k in cls.model_fields)
)
"""Every key some runtime has (an override is checked against these before the runtime is known)."""

RUN_ID_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "url": None,
        "executable": None,
        "model_path": None,
        "draft_model_path": None,
        "extra_args": [],
        "api_key_env": None,
        "kv_cache_memory_gib": None,
        "prefix_cache_broken_versions": [],
        "engine": None,
        "load_format": None,
        "served_model_name": None,
    }
)
"""What a runtime without one of these keys counts as in a run id: the value every record written
when one settings model held all runtimes' keys had for it, so those records keep their run ids."""


def settings_for(name: object) -> type[RuntimeSpec] | None:
    """The settings model of the runtime called `name`, or None."""
    return RUNTIMES.get(name) if isinstance(name, str) else None


def runtime_table() -> list[str]:
    """The rows of docs/vocabulary.md's runtime table, from `RUNTIMES`: each runtime's summary,
    the keys it adds to what every runtime has, and its drafters with the engine's name for each."""
    shared = set(RuntimeSpec.model_fields)
    rows = []
    for name, cls in RUNTIMES.items():
        own = ", ".join(f"`{k}`" for k in cls.model_fields if k not in shared) or "—"
        drafters = (
            (
                "any: the simulator imitates each"
                if issubclass(cls, SimRuntimeSpec)
                else "whatever the server was started with"
            )
            if cls.drafters is None
            else ", ".join(
                f"`{d}` ({engine})" if engine != d else f"`{d}`"
                for d, engine in cls.drafters.items()
            )
        )
        rows.append(f"| `{name}` | {cls.summary} | {own} | {drafters} |")
    return rows


def real_engines() -> list[str]:
    """The runtimes that serve a model (every one but the simulator), in the registry's order."""
    return [name for name, cls in RUNTIMES.items() if not cls.simulated]
