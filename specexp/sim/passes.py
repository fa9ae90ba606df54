"""What one step's forward passes take under an engine profile.

A step runs as one forward pass, or (llama.cpp) as one pass per prefill micro-batch, or per run
of consecutive slot ids when each slot has its own KV stream (specexp/sim/ubatches.py). Besides
each pass's kernels (roofline.costmodel) a profile adds:

- a CPU cost per pass of a step that prefills (`prefill_pass_overhead_ms`);
- the extra of a pass over more than one token (`batched_pass_overhead_ms`, llama.cpp's unfused
  kernels);
- the launches of a step run kernel by kernel: past the engine's largest CUDA graph
  (`ungraphed_layer_us`), a hybrid model's prefill (`linear_prefill_layer_ms`), or any prefill with a
  drafter the engine's prefill graphs cannot serve (`ungraphed_prefill_drafters`), added to the
  step's kernels or, with `prefill_launches_overlap`, the longer of the two;
- llama.cpp's compute graphs, for the passes of a step that only decodes: a pass whose shape
  (tokens, slots, padded KV length) differs from the pass before it has its graph rebuilt
  (`graph_rebuild_ms`: llama_context keeps only the previous graph to reuse); a shape that ggml-cuda
  has not seen runs without a CUDA graph (`ungraphed_pass_ms`, by tokens), the next pass of that
  shape captures one (`graph_capture_ms`: ggml-cuda captures on the second call with the same
  properties), and later ones replay it. A CUDA graph is kept per shape: with graphs off, a step
  split into two runs of slots loses what a one-run step loses (conf/sim_engine/llamacpp.yaml).
  A step that prefills pays its graphs in `prefill_pass_overhead_ms` and leaves no CUDA graph
  behind: llama-server's windows show the capture again after every batch of prompts, even where
  the decode shape is the last window's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from specexp.roofline.costmodel import CostModel, PassParts, Slice
from specexp.sim.profile import EngineProfile
from specexp.sim.ubatches import equal_ubatches, mixed_ubatches

KV_PAD = 256
"""llama.cpp pads a pass's KV length to 256 cells so that its graph can be reused (get_n_kv)."""


class StepPasses:
    """The forward passes of one engine's steps, and the compute graph each leaves behind."""

    def __init__(
        self,
        target: CostModel,
        prefill_target: CostModel,
        profile: EngineProfile,
        drafter: str = "none",
    ) -> None:
        self.target = target
        self.prefill_target = prefill_target
        self.profile = profile
        self._shape: Hashable | None = None
        """The shape of the last pass (None: one that prefilled)."""
        self._cuda_graphs: dict[Hashable, bool] = {}
        """Decode pass shapes ggml-cuda has seen -> whether their CUDA graph is captured."""
        self._ungraphed = sorted(profile.ungraphed_pass_ms.items())
        self.graph_max_tokens: int | None = profile.graph_max_tokens
        """The largest step run from a CUDA graph (the engine caps the profile's: graph_cap)."""
        self.ungraphed_prefill = drafter in profile.ungraphed_prefill_drafters
        """Whether every step that prefills runs kernel by kernel (the `drafter` it drafts with, none
        where it drafts nothing, in `ungraphed_prefill_drafters`)."""
        self.kernel_by_kernel = False
        """Whether the last step launched kernels one by one: past `graph_max_tokens`, a hybrid
        model's linear-attention prefill, which runs outside the graphs (linear_prefill_layer_ms), or a
        prefill with `ungraphed_prefill`."""
        self.launch_s = 0.0
        """How long the engine's thread took to build and launch the last step: a prefill
        `prefill_launch_ms`, and one launched kernel by kernel its launches besides, where they run ahead
        of its kernels (a dense model's ungraphed prefill with `prefill_launches_overlap`), else at least
        its whole pass; a graphed decode step next to nothing."""
        self.launch_waits = False
        """Whether the last step's launch waited on the GPU, ending with its pass."""
        self._bounded: list[float] = []
        self.parts = PassParts()
        """The last step's time by what bounds it; the engine's own costs (graphs, launches, its
        per-pass overheads) are `fixed`."""

    def seconds(
        self, verify: list[Slice], chunks: Sequence[tuple[int, int, int]], slots: list[int] | None
    ) -> float:
        """The step's passes: `verify` the decoding sequences' slices, `chunks` (tokens, prefilled
        before, prompt) of the prompts it prefills, `slots` the sequence ids in batch order (the
        decoding ones first; None: continuous batching)."""
        prefill = [
            Slice(tokens=n, context=done, logits=int(done + n == prompt))
            for n, done, prompt in chunks
        ]
        tokens = sum(x.tokens for x in verify) + sum(x.tokens for x in prefill)
        cap = self.graph_max_tokens
        past_graph = cap is not None and tokens > cap
        linear = bool(
            prefill
            and self.profile.linear_prefill_layer_ms
            and self.target.shape.linear_attention_layers
        )
        drafted = bool(prefill) and self.ungraphed_prefill and not linear
        self.kernel_by_kernel = past_graph or linear or drafted
        shape, p = self.target.shape, self.profile
        layers = shape.full_attention_layers + shape.linear_attention_layers
        overlap = p.prefill_launches_overlap and (linear or drafted)
        launches = 0.0
        if overlap and linear:
            launches = self._linear_launches()
        elif drafted:
            launches = layers * p.ungraphed_prefill_layer_us / 1e6
        if past_graph:
            launches = max(launches, layers * p.ungraphed_layer_us / 1e6)
        self._bounded = [0.0] * len(PassParts._fields)
        kernels = self._seconds(verify, prefill, chunks, slots)
        # overlapping, the launches run ahead of kernels longer than themselves; else the GPU waits
        # on every launch
        total = max(kernels, launches) if overlap else kernels + launches
        # the scheduler builds a prefill batch, then launches it: from its graphs in next to nothing;
        # a dense model's eager prefill with launches that run ahead of its kernels; a hybrid model's
        # linear-attention prefill waiting on the GPU, till its pass ends (docs/engines.md 2.9)
        built = p.prefill_launch_ms / 1e3 if prefill else 0.0
        self.launch_waits = self.kernel_by_kernel and not (overlap and not linear)
        if not self.kernel_by_kernel:
            self.launch_s = built
        elif not self.launch_waits:
            self.launch_s = built + launches
        else:
            self.launch_s = max(built, total)
        parts = PassParts(*self._bounded)
        self.parts = parts._replace(fixed=parts.fixed + total - sum(parts))
        return total

    def _pass(self, model: CostModel, group: list[Slice]) -> float:
        """One pass of `model` over `group`, its parts added to the step's."""
        parts = model.pass_parts(group)
        self._bounded = [a + b for a, b in zip(self._bounded, parts, strict=True)]
        return sum(parts)

    def _seconds(
        self,
        verify: list[Slice],
        prefill: list[Slice],
        chunks: Sequence[tuple[int, int, int]],
        slots: list[int] | None,
    ) -> float:
        p = self.profile
        equal = p.prefill_ubatch_split == "equal"
        if not prefill:
            if equal and slots is not None and p.prefill_ubatch_tokens:  # one pass per run of slots
                leads: list[int] = []
                runs = equal_ubatches(verify, [], p.prefill_ubatch_tokens, slots, leads)
                return sum(
                    self._pass(self.target, g) + self._batched(g) + self._graph(g, lead)
                    for g, lead in zip(runs, leads, strict=True)
                )
            lead = slots[0] if slots else None
            return (
                self._pass(self.target, verify) + self._batched(verify) + self._graph(verify, lead)
            )
        self._shape = None
        self._cuda_graphs.clear()
        ubatch = p.prefill_ubatch_tokens
        linear = self.target.shape.linear_attention_layers * p.linear_prefill_layer_ms / 1e3
        if p.prefill_launches_overlap:
            linear = 0.0  # the step's launches, seconds() takes the longer of them and the kernels
        if ubatch is None:
            return (
                self._pass(self.prefill_target, verify + prefill)
                + self._batched(verify + prefill)
                + linear
            )
        passes = (
            equal_ubatches(verify, prefill, ubatch, slots)
            if equal
            else mixed_ubatches(verify, prefill, ubatch)
        )
        passes = [group for group in passes if group]
        overhead = len(passes) * (p.prefill_pass_overhead_ms / 1e3 + linear)
        return overhead + sum(self._pass(self.prefill_target, g) + self._batched(g) for g in passes)

    def _linear_launches(self) -> float:
        """A hybrid prefill's launches, seconds: its linear-attention layers' `linear_prefill_layer_ms`
        and its other layers' `ungraphed_prefill_layer_us`."""
        shape, p = self.target.shape, self.profile
        return (
            shape.linear_attention_layers * p.linear_prefill_layer_ms / 1e3
            + shape.full_attention_layers * p.ungraphed_prefill_layer_us / 1e6
        )

    def _batched(self, group: list[Slice]) -> float:
        """The engine's extra cost of a pass over more than one token (batched_pass_overhead_ms)."""
        return (
            self.profile.batched_pass_overhead_ms / 1e3 if sum(s.tokens for s in group) > 1 else 0.0
        )

    def _graph(self, group: list[Slice], lead: int | None) -> float:
        """What a decode pass's compute graph costs it (`lead`: its first sequence id): rebuilt
        when its shape is not the last pass's; run without a CUDA graph the first time ggml-cuda
        sees the shape, captured the second time, replayed after."""
        p = self.profile
        if not (p.graph_rebuild_ms or p.graph_capture_ms or p.ungraphed_pass_ms) or not group:
            return 0.0
        tokens = sum(s.tokens for s in group)
        shape = (tokens, len(group), lead, -(-max(s.context + s.tokens for s in group) // KV_PAD))
        ms = p.graph_rebuild_ms if shape != self._shape else 0.0
        self._shape = shape
        if shape not in self._cuda_graphs:
            self._cuda_graphs[shape] = False
            ms += self._ungraphed_ms(tokens)
        elif not self._cuda_graphs[shape]:
            self._cuda_graphs[shape] = True
            ms += p.graph_capture_ms
        return ms / 1e3

    def _ungraphed_ms(self, tokens: int) -> float:
        """ungraphed_pass_ms of the smallest measured pass at least `tokens` wide (the largest past
        them): the cost steps up where the kernels change, past 8 tokens, rather than growing."""
        table = self._ungraphed
        return next((ms for n, ms in table if n >= tokens), table[-1][1] if table else 0.0)
