"""Engine profiles: what the simulator imitates of a named engine besides the forward pass.

The forward pass is the hardware's (roofline.costmodel, fitted to kernels); an engine adds its
own costs around it, and they differ by engine (conf/sim_engine/<name>.yaml, every figure with
its source):

- per step: a fixed CPU cost (scheduling, input preparation) and, per running sequence, the
  sampler over the vocabulary and detokenisation (llama-server samples on the CPU);
- prefill: the tokens one step takes (vLLM's chunk budget, llama.cpp's n_batch) and the
  micro-batches it runs them in (llama.cpp's n_ubatch: every micro-batch is its own pass, with a
  CPU cost of its own);
- batching: continuous (vLLM, SGLang) or llama-server's slots (least recently used first, each
  step filled in slot order, micro-batches over runs of consecutive slot ids), and whether a step
  that prefills also decodes (SGLang's does not: `prefill_first`);
- the engine's own kernels' fixed cost per layer, where it differs from the hardware file's;
- per request: a cost before the first step (HTTP, tokenisation, scheduling), fixed and per prompt
  token, and one paid a request at a time by the engine's scheduling thread;
- per pass: the extra cost of a pass over more than one token (llama.cpp's unfused kernels), and
  of a decode pass whose compute graph is new (llama.cpp rebuilds it and runs it without a CUDA
  graph, then captures one: specexp/sim/passes.py);
- the prefix cache's block, where the engine sets it, whether a drafter's hit gives up its
  last block, and where a hybrid model keeps the recurrent states a hit resumes from.

`calibrations` names, per device, what the profile's figures were checked against; a device
not named is simulated **uncalibrated**, and the report's Method says so.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from specexp.sim.kvcache import HybridStates
from specexp.spec.experiment import ExperimentSpec
from specexp.spec.runtime import SimRuntimeSpec

DEFAULT = SimRuntimeSpec.default_engine


class EngineProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str
    description: str
    batching: Literal["continuous", "slots"] = "continuous"
    """continuous: up to max_num_seqs sequences share every step, first come first served;
    slots: a fixed number of slots (llama-server --parallel), also batched together, each
    holding one request: a request takes the free slot released longest ago (the highest id
    among never-used ones), a step takes its tokens slot by slot in slot order, and with equal
    micro-batches the slot is the sequence id whose runs split_equal keeps together."""
    prefill_first: bool = False
    """A step with prompt tokens to prefill runs no decode: the sequences already decoding wait until
    the waiting prompts are prefilled (SGLang's scheduler, whose prefill batches do not mix with decode
    unless --enable-mixed-chunk, which speculative decoding turns off); False: a step holds every
    running sequence's decode tokens and prefill chunks in what the token budget leaves (vLLM,
    llama-server)."""
    step_overhead_ms: float = Field(default=0.0, ge=0)
    """CPU time of one step besides the forward pass (scheduler, input preparation), ms."""
    seq_overhead_ms: float = Field(default=0.0, ge=0)
    """CPU time per sequence that samples in a step (sampler over the vocabulary,
    detokenisation), ms: paid serially, so it grows with the batch."""
    batch_tokens: int | None = Field(default=None, ge=1)
    """Tokens one step may take (llama.cpp n_batch); None: runtime.max_num_batched_tokens."""
    prefill_ubatch_tokens: int | None = Field(default=None, ge=1)
    """Prefill micro-batch: a step's prompt tokens run in passes of at most this many (each
    reads the weights again and pays the pass overhead); None: one pass per step."""
    prefill_ubatch_split: Literal["mixed", "equal"] = "mixed"
    """How a step's prompt tokens of several sequences fill the micro-batches. mixed: in order,
    each micro-batch full; equal: each sequence in a micro-batch contributes the same number of
    tokens (llama.cpp with one KV stream per slot splits a batch with split_equal), so prompts
    of unequal remainders leave micro-batches part-empty and need more passes."""
    layer_overhead_us: float | None = Field(default=None, ge=0)
    """Fixed cost of a forward pass per decoder layer with the engine's own kernels (launch gaps,
    norms, rotary, attention set-up), us; None: the hardware file's (fitted to PyTorch kernels)."""
    batched_pass_overhead_ms: float = Field(default=0.0, ge=0)
    """Extra time of a forward pass over more than one token, ms: llama.cpp runs a one-token pass
    through its mat-vec kernels with the gate and up projections fused (BF16 and F16 weights on
    Ampere and later: ggml-cuda/mmvf.cu ggml_cuda_should_use_mmvf takes ne11 == 1 only), and any
    wider pass through its tensor-core kernels, unfused."""
    prefill_pass_overhead_ms: float = Field(default=0.0, ge=0)
    """CPU and launch time of every pass of a step that prefills, besides its kernels, ms
    (llama.cpp builds a compute graph for each new micro-batch shape and cannot replay its
    decode CUDA graph): a step cut into more micro-batches pays it more often."""
    graph_rebuild_ms: float = Field(default=0.0, ge=0)
    """CPU time of building a decode pass's compute graph anew, ms: llama.cpp reuses only the
    previous pass's graph (llama_context::process_ubatch, can_reuse), so a pass with other tokens,
    other slots or another padded KV length than the pass before it rebuilds (specexp/sim/passes.py)."""
    ungraphed_pass_ms: dict[int, float] = {}
    """Extra time of a decode pass run without a CUDA graph, ms, by its tokens (a pass takes the
    figure of the smallest width listed at least as wide as it, the largest past them all):
    ggml-cuda runs a graph whose properties changed directly, and captures it only when the same
    properties come twice in a row (ggml_backend_cuda_graph_compute's warm-up)."""
    graph_capture_ms: float = Field(default=0.0, ge=0)
    """Time of capturing and instantiating a CUDA graph, ms: the second pass of a new shape."""
    prefill_compute: float = Field(default=1.0, gt=0, le=2)
    """Share of the hardware file's achieved GEMM and attention compute the engine's prefill
    kernels reach (the hardware figures are fitted to PyTorch/cuBLAS kernels and SDPA attention;
    above 1 where the engine's own kernels do better, never past the datasheet's peak)."""
    request_overhead_ms: float = Field(default=0.0, ge=0)
    """Fixed cost of a request before its first step (HTTP, tokenisation, scheduling), ms,
    paid by each request in parallel with the others (the HTTP threads)."""
    request_overhead_us_per_token: float = Field(default=0.0, ge=0)
    """The part of a request's cost before its first step that grows with its prompt (tokenisation,
    block hashing, the token ids handed to the engine), us per prompt token, paid like
    request_overhead_ms: cached prompt tokens pay it too."""
    request_serial_ms: float = Field(default=0.0, ge=0)
    """Cost of a request paid one request at a time by the engine's single scheduling thread
    (llama-server's main loop takes each new task and launches its slot), ms: requests that
    arrive together wait for each other, so it adds (i - 1) x this to the i-th one's TTFT."""
    request_serial_release: Literal["each", "together", "first"] = "each"
    """How requests leave that serial stage for the scheduler. each: one by one as each is done
    (llama-server's main loop); together: those handled in one busy spell all reach the scheduler
    when the last of them is done (the requests of a burst advance through one event loop side by
    side); first: the first of a busy spell as soon as it is done, the others together when the last
    is done (vLLM's API server: the first request of a burst wakes an idle engine core, which starts
    a step with it alone, and the rest reach it together while that step runs)."""
    cache_block_tokens: int | None = Field(default=None, ge=1)
    """The engine's prefix-cache block; None: the model's (or 16)."""
    drafter_recomputes_last_block: bool = False
    """With a drafter that reads the target's hidden states (EAGLE, MTP, DFlash, DSpark), a
    prefix-cache hit gives up its last block so that the drafter gets that block's hidden
    states (vLLM: use_eagle drops the last matched block); on a hybrid model with its large
    blocks, a warm request recomputes one to two blocks."""
    hybrid_states: HybridStates = "align"
    """Where a hybrid model (recurrent layers) keeps the states that a prefix-cache hit can resume
    from, besides the KV blocks. align (vLLM's mamba_cache_mode align): prefill chunks are cut to
    whole blocks, one ending at the prompt's last full block, and the state is kept at every chunk
    end; chunk_floor (SGLang's extra_buffer, 0.5.12 as measured on the H200 and 0.5.23's source):
    chunks are not cut, and each keeps the state at its last block boundary; prompt_tail
    (llama-server's context checkpoints): the states
    `hybrid_tail_tokens` before every prompt's end. With align and chunk_floor, a request whose KV
    hit runs past its state hit also keeps the state where its KV hit ends (vLLM's Marconi
    admission, SGLang's branch checkpoint): the next request with that prefix resumes there."""
    hybrid_tail_tokens: tuple[int, ...] = ()
    """prompt_tail: how many tokens before a prompt's end each of its states is kept."""
    checkpoint_save_gbps: float | None = Field(default=None, gt=0)
    """prompt_tail: how fast llama-server copies a hybrid sequence's recurrent state from the device
    to a context checkpoint in host memory, GB/s, on its main loop before the step's decode (None:
    free). It takes one before each prompt batch that ends within a micro-batch of the prompt's end
    or starts the user message of a chat prompt."""
    checkpoint_restore_gbps: float | None = Field(default=None, gt=0)
    """prompt_tail: the same, back to the device, for a hit resumed from a checkpoint (None: free)."""
    static_memory_only: bool = False
    """The engine's share of device memory holds the weights and the caches only, its activations and
    CUDA graphs living in the rest (SGLang's mem_fraction_static); False: the share holds them too
    (vLLM's gpu_memory_utilization, whose profile run takes them out before the KV cache)."""
    state_pool_ratio: float | None = Field(default=None, gt=0)
    """A hybrid model's recurrent states in a pool of their own (SGLang's mamba pool and its
    mamba_full_memory_ratio): the states take ratio / (1 + ratio) of what is left for the cache after
    the speculative reserve, the tokens' KV the rest. None: each running sequence's states come out of
    the one KV pool (vLLM)."""
    state_reserve_requests: int = Field(default=0, ge=0)
    """With a drafter, the states of one draft position each of this many requests are set aside
    before that split (SGLang: its max_running_requests, 48 with speculative decoding)."""
    states_per_request: int = Field(default=1, ge=1)
    """States of the pool one running request holds (SGLang with a radix cache: 3, and 2 more for
    extra_buffer's ping-pong buffers beside the overlap scheduler): at most pool / this requests
    run at once, and the rest wait."""
    hybrid_block_tokens: int | None = Field(default=None, ge=1)
    """A hybrid model's prefix-cache block under this engine, drafter or not; None: the model's
    (conf/model/), or the page-aligned block of `hybrid_block_rule`."""
    hybrid_block_rule: Literal["model", "page_aligned"] = "model"
    """How the engine sizes a hybrid model's attention block. model: the model file's
    cache_block_tokens (and _speculative); page_aligned (vLLM's _align_hybrid_block_size): the
    smallest multiple of 16 tokens whose attention page (K and V of one layer) holds one layer's
    recurrent and convolution state, the convolution state growing by k with a drafter
    (specexp.sim.kvcache.page_aligned_block)."""
    linear_prefill_layer_ms: float = Field(default=0.0, ge=0)
    """Fixed time of a linear-attention (Gated DeltaNet) layer in a pass that prefills, ms per layer: its
    chunked prefill kernels run outside the engine's CUDA graphs, a chain of small Triton launches per
    layer, whatever the chunk's length."""
    sync_scheduling_drafters: tuple[str, ...] = ()
    """Drafters with which the engine schedules without overlapping the GPU (vLLM turns asynchronous
    scheduling off for n-gram, draft-model and suffix speculation)."""
    sync_step_overhead_ms: float = Field(default=0.0, ge=0)
    """CPU time of a step the engine schedules synchronously (`sync_scheduling_drafters`), ms: the
    scheduler, the drafter's proposal and the next step's inputs no longer overlap the GPU's pass."""
    sync_position_overhead_ms: float = Field(default=0.0, ge=0)
    """CPU time of each drafted position in a step the engine schedules synchronously, ms: on the H200
    vLLM's n-gram steps grow by about half a millisecond a position at one to sixteen streams, far more
    than the pass over the extra tokens costs."""
    graph_max_tokens: int | None = Field(default=None, ge=1)
    """The most tokens a step may hold and still replay a CUDA graph (vLLM's max_cudagraph_capture_size,
    512 by default); unless the server sets its own (runtime.cuda_graph_max_tokens) the engine caps it at
    2 x max_num_seqs x (1 + k), and at the step's token budget either way, as
    vLLM does (config/vllm.py _set_cudagraph_sizes). A step of more tokens runs kernel by kernel and pays
    `ungraphed_layer_us`. None: no such limit (llama.cpp's graphs: `ungraphed_pass_ms`)."""
    graph_cap_by_batch: bool = True
    """Whether the engine caps `graph_max_tokens` by its batch, 2 x max_num_seqs x (1 + k), as vLLM does
    by default; False: `graph_max_tokens` whatever the batch and k (SGLang's piecewise CUDA graphs reach
    `piecewise_cuda_graph_max_tokens`, 8,192, at max_running_requests 48 and with EAGLE-3 at 3/1/4 alike:
    its /server_info)."""
    ungraphed_layer_us: float = Field(default=0.0, ge=0)
    """Extra time of a step past `graph_max_tokens`, us per decoder layer: its kernels are launched one
    by one from the engine's thread, and the GPU waits on the launches."""
    ungraphed_prefill_drafters: tuple[str, ...] = ()
    """Drafters with which every step that prefills runs kernel by kernel, whatever its size, and pays
    `ungraphed_prefill_layer_us`: SGLang captures its prefill graphs without the target's hidden states,
    which EAGLE-style drafters (EAGLE, EAGLE-3, MTP) take from every prefill (docs/engines.md 2.6). A
    hybrid model's prefill, outside the graphs anyway, pays `linear_prefill_layer_ms` instead."""
    ungraphed_prefill_layer_us: float = Field(default=0.0, ge=0)
    """Extra time of such a step, us per decoder layer (its kernels launched one by one)."""
    prefill_launches_overlap: bool = False
    """A prefill launched kernel by kernel (`ungraphed_prefill_drafters`, or a hybrid model's, whose
    linear-attention layers pay `linear_prefill_layer_ms` and its other layers `ungraphed_prefill_layer_us`)
    takes the longer of its launches and its kernels: the launches run ahead of kernels longer than
    themselves (SGLang's eager prefill, docs/engines.md 2.6). False: their sum (vLLM's)."""
    async_output: bool = False
    """Asynchronous scheduling: a step's tokens leave the engine only once the next step has been
    launched (vLLM's EngineCore.step_with_batch_queue), and a step launched kernel by kernel (past
    `graph_max_tokens`, or a hybrid model's prefill, whose linear-attention layers run outside the
    graphs: `linear_prefill_layer_ms`) takes its whole pass to launch (a graphed one next to nothing;
    with `overlap_schedule`, specexp/sim/passes.py StepPasses.launch_s). Not with
    `sync_scheduling_drafters`, nor when no step follows."""
    prefill_launch_ms: float = Field(default=0.0, ge=0)
    """The scheduler's CPU time to build and launch a step that prefills, ms, with `overlap_schedule`
    (without it, unused): SGLang prepares the batch and replays its piecewise graphs layer by layer. An
    effective figure, measured as when a burst's second batch was formed after the first request's
    hand-off (docs/engines.md 2.9). With `async_output` the step before's tokens leave only after it
    (specexp/sim/launches.py)."""
    overlap_schedule: bool = False
    """The scheduler forms the next batch as soon as it has launched this one and the one before has
    finished (SGLang's event_loop_overlap), not when this one ends: a request that arrives meanwhile
    waits a step more, and a step ends no earlier than its launch (specexp/sim/launches.py)."""
    sampling: Literal["per_sequence", "per_token"] = "per_sequence"
    """What `seq_overhead_ms` is paid for. per_sequence: once per sequence that samples in a step;
    per_token: once per token a step emits (llama-server samples a verify's positions one by one,
    up to the first that differs from the draft: common_sampler_sample_and_accept_n) and once per
    token a model drafter drafts (it samples its own logits: specexp.sim.drafting.DraftCost.samples)."""
    drafter_round_overhead_passes: dict[str, float] = {}
    """The fixed cost of a drafting round, in single-sequence target passes, by drafter, where this
    engine's differs from the drafter's own (DrafterCost.round_overhead_passes, vLLM's): SGLang's
    speculative worker overlaps its scheduling with the GPU (docs/engines.md 2.7)."""
    draft_model_catch_up: bool = False
    """A draft model also runs over every token of the target's batch, in one batched pass, before
    it drafts (llama.cpp's draft-simple `process` takes the target's batch, prompts and verify
    tokens alike), besides its sequential passes: one per position drafted, and one more for the
    position whose token it drew under p_min. False: k sequential passes."""
    start_spread: float | None = Field(default=None, ge=0)
    """How far a fresh start of the server moves its speed: the standard deviation of the log of a
    start's pace (a factor on every step's time), measured by starting the same job again on the
    same machine. A job of `workload.server_starts` > 1 draws each start's pace from it (each
    cell's starts their own draws); a job of one start runs at the profile's figures. None: not
    measured for this engine, and simulated starts differ in their acceptance draws alone."""
    calibrations: dict[str, str] = {}
    """Device id -> what the figures were checked against on it."""
    devices: dict[str, dict[str, Any]] = {}
    """Device id -> figures of this profile that differ on that device (the engine's kernels and
    threads differ from one backend to another: llama.cpp's CPU backend has no CUDA graphs)."""

    @model_validator(mode="after")
    def _launch_needs_overlap(self) -> EngineProfile:
        if self.prefill_launch_ms and not self.overlap_schedule:
            raise ValueError(
                "prefill_launch_ms is used only with overlap_schedule: true (set both, or neither)"
            )
        return self

    def step_overhead_s(self, drafter: str, k: int = 0) -> float:
        """The fixed CPU time of one step with `drafter` drafting `k` positions, seconds."""
        sync = (
            self.sync_step_overhead_ms + self.sync_position_overhead_ms * k
            if drafter in self.sync_scheduling_drafters
            else 0.0
        )
        return (self.step_overhead_ms + sync) / 1e3

    def graph_cap(
        self, max_num_seqs: int, k: int, batch_tokens: int, given: int | None = None
    ) -> int | None:
        """The largest step run from a CUDA graph under these settings: `given` (the server's own
        setting) or `graph_max_tokens` capped as vLLM caps its default, either within the budget."""
        if self.graph_max_tokens is None:
            return None
        if given is not None:
            return min(given, batch_tokens)
        if not self.graph_cap_by_batch:
            return min(self.graph_max_tokens, batch_tokens)
        return min(self.graph_max_tokens, 2 * max_num_seqs * (1 + k), batch_tokens)

    def output_waits_for_next_launch(self, drafter: str) -> bool:
        """Whether a step's tokens leave only after the next step's launch (`async_output`)."""
        return self.async_output and drafter not in self.sync_scheduling_drafters


def load_profile(name: str | None, device: str | None = None) -> EngineProfile:
    """The profile conf/sim_engine/<name>.yaml (None: vllm), with its figures for `device` where it
    names that device; SpecError naming the accepted ones."""
    from specexp.spec.options import load_option

    profile: EngineProfile = load_option(
        EngineProfile, "sim_engine", name or DEFAULT, "runtime.engine"
    )
    return for_device(profile, device)


def for_device(profile: EngineProfile, device: str | None) -> EngineProfile:
    """`profile` with its figures for `device` (`devices`), validated as the profile's own."""
    figures = profile.devices.get(device or "")
    if not figures:
        return profile
    return EngineProfile.model_validate({**profile.model_dump(), **figures})


def calibration(profile: EngineProfile, spec: ExperimentSpec) -> str:
    """What this profile's figures rest on for the spec's device, or "uncalibrated"."""
    return profile.calibrations.get(spec.hardware.name, "uncalibrated")
