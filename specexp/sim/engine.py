"""The simulated serving engine: one scheduler on a virtual clock, driven by `submit` and `step`.

Continuous batching as vLLM's V1 scheduler does it: every step is one forward pass holding the
decode (or verify) tokens of every running sequence plus prefill chunks up to the token budget
(with a profile's `prefill_first`, SGLang's, a step with prompt tokens runs them alone). With a
drafter, every decode step drafts k tokens per sequence, verifies k + 1 in the target pass, and
emits the accepted prefix plus one bonus token. Waiting requests are admitted first come, first
served, up to max_num_seqs, and only while the KV pool can hold them whole (prompt, output and
draft lookahead, plus their recurrent state), so KV capacity limits concurrency. With an engine
profile of `batching: slots` (llama-server) each request takes a slot as llama-server chooses it, a
step takes its tokens in slot order, and equal micro-batches keep to runs of consecutive slots
(specexp/sim/ubatches.py); what a step's passes cost is specexp/sim/passes.py's. A prompt's full
blocks enter the prefix cache (kvcache.KvPool) when its prefill ends; cached blocks are evicted,
least recently used first, to make room. The engine keeps the counters a vLLM server exports.

Two faces drive it: the runtime adapter submits a window and steps until it finishes (`run`,
`observe` reading its state after every step); the real-time server steps on the wall clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from specexp.measure.events import Counters, Request, RequestTrace, TokenEvent
from specexp.roofline.costmodel import CostModel, Slice
from specexp.sim.costs import StepCosts
from specexp.sim.drafting import AcceptanceModel, DraftCost
from specexp.sim.frontend import Frontend
from specexp.sim.kvcache import CHAT_TURN_TOKENS, CacheLayout, KvPool
from specexp.sim.launches import StepLaunches
from specexp.sim.memory_plan import MemoryPlan
from specexp.sim.passes import StepPasses
from specexp.sim.profile import EngineProfile
from specexp.sim.sequences import Counts, HeldTokens, Seq, Step, trace, window_blocks


class SimEngine:
    """One simulated server: a cost model, a drafter, a KV pool with its prefix cache, a clock."""

    def __init__(
        self,
        target: CostModel,
        draft: DraftCost | None,
        acceptance: AcceptanceModel | None,
        k: int,
        *,
        max_num_batched_tokens: int,
        max_num_seqs: int,
        layout: CacheLayout,
        memory: MemoryPlan | None = None,
        profile: EngineProfile | None = None,
        prefill_target: CostModel | None = None,
        drafter: str = "none",
        cuda_graph_max_tokens: int | None = None,
    ) -> None:
        self.target = target
        self.draft = draft
        self.acceptance = acceptance
        self.k = k if draft is not None else 0
        scheduled_with = drafter if self.k else "none"
        ideal = EngineProfile(name="ideal", description="no engine costs")
        self.passes = StepPasses(target, prefill_target or target, profile or ideal, scheduled_with)
        """The steps' forward passes (with the engine's prefill kernels for steps that prefill)."""
        self.max_num_batched_tokens = self.profile.batch_tokens or max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self._step_s = self.profile.step_overhead_s(scheduled_with, self.k)
        """Fixed CPU time of a step (more where the engine schedules synchronously with this drafter)."""
        self.passes.graph_max_tokens = self.profile.graph_cap(
            max_num_seqs, self.k, self.max_num_batched_tokens, cuda_graph_max_tokens
        )
        self.held = HeldTokens(self.profile.output_waits_for_next_launch(scheduled_with))
        """The last step's tokens, until the next step is launched."""
        self.launches = StepLaunches(self.profile)
        """When the scheduler formed and launched the last step (specexp/sim/launches.py)."""
        self.layout = layout
        self.memory = memory
        self.pool = KvPool(memory.kv_bytes if memory is not None else float("inf"))
        self.clock = 0.0
        self.pace = 1.0
        """A factor on every step's time: this start of the server's own speed (sim.startup.start_pace)."""
        self.costs = StepCosts()
        self.frontend = Frontend(self.profile)
        """What a request costs before the scheduler can take it (specexp/sim/frontend.py)."""
        self._slot_last_used = (
            [(-1.0, 0)] * max_num_seqs if self.profile.batching == "slots" else []
        )
        """Per slot, when it last released a request ((-1, 0): never): the clock, then the release's
        number, as llama-server stamps each slot it releases, one after the other in slot order."""
        self._releases = 0
        self._restores = 0
        """Checkpoint restores of admissions the next step pays for (prompt_tail)."""
        self.counts = Counts(per_position=[0] * self.k)
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.observe: Callable[[SimEngine], None] | None = None

    @property
    def profile(self) -> EngineProfile:
        """What the engine imitates besides the forward pass (one profile for it and its passes)."""
        return self.passes.profile

    @property
    def block_tokens(self) -> int:
        return self.layout.block_tokens

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def counters(self) -> Counters:
        return self.counts.counters(spec=self.k > 0)

    def reset_prefix_cache(self) -> None:
        self.pool.clear()

    def idle(self, seconds: float) -> None:
        """Let `seconds` of virtual time pass (nothing runs between windows)."""
        self.clock += max(seconds, 0.0)

    # -- requests ------------------------------------------------------------------------
    def submit(self, seq: Seq, at: float | None = None) -> bool:
        """Queue `seq`, arriving at engine time `at` (default: now); an idle engine's clock moves
        up to the arrival. False (and `seq.error` set) when the server answers it with an error."""
        limit = self.memory.max_model_len if self.memory is not None else 0
        if limit and seq.prompt + seq.max_tokens > limit:
            seq.error = (
                f"prompt ({seq.prompt:,} tokens) + max_tokens ({seq.max_tokens:,}) exceeds "
                f"max_model_len {limit:,}"
            )
            return False
        at = self.clock if at is None else at
        if not self.busy:
            self.clock = max(self.clock, at)
        seq.arrived = at
        self.frontend.admit(seq, at, seq.prompt)
        self.waiting.append(seq)
        return True

    def abort(self, seq: Seq) -> None:
        """Drop `seq` wherever it is, freeing what it holds."""
        if seq in self.waiting:
            self.waiting.remove(seq)
        elif seq in self.running:
            self.running.remove(seq)
            self._release(seq)

    def _admit(self, s: Seq) -> bool:
        """Look up `s`'s cached prefix and reserve the pool for the rest; False: it has to wait."""
        layout, cached, hits = self.layout, 0, []
        if layout.enabled and layout.hits:
            n = layout.usable_blocks(
                s.prompt, self.pool.match(s.blocks[: (s.prompt - 1) // layout.block_tokens])
            )
            if layout.hybrid:  # and back to the last block with a state to resume from
                n, kv = self.pool.match(s.blocks[:n], snapshots_only=True), n
                s.junction = kv if kv > n else 0
            hits, cached = list(s.blocks[:n]), n * layout.block_tokens
        need = (
            self.memory.need(s.prompt - cached + s.max_tokens + self.k)
            if self.memory is not None
            else 0.0
        )
        self.pool.pin(hits)  # before reserving: eviction must not take the blocks it reuses
        if not self.pool.reserve(need):
            self.pool.unpin(hits)
            return False
        s.cached = s.prefilled = cached
        s.held, s.pinned = need, hits
        if cached and layout.hybrid and layout.states == "prompt_tail":  # from a checkpoint
            self._restores += 1
        c = self.counts
        c.cached_prompt_tokens += cached
        c.prompt_tokens += s.prompt - cached
        c.prefix_queries += s.prompt if layout.enabled else 0
        return True

    def _remember(self, s: Seq) -> None:
        """A finished prefill: the prompt's full blocks enter the prefix cache."""
        layout = self.layout
        if not layout.enabled or not s.blocks:
            return
        token_bytes = (
            self.memory.token_bytes - layout.snapshot_bytes_per_token
            if self.memory is not None
            else 0.0
        )
        pinned, moved = self.pool.insert(
            s.blocks,
            layout.block_tokens * token_bytes,
            layout.kept_state_bytes,
            frozenset(s.checkpoints) if layout.hybrid else None,
            from_running=s.held,
        )
        self.pool.unpin(s.pinned)
        s.pinned, s.held = pinned, s.held - moved

    def _free_slot(self) -> int:
        """llama-server's least-recently-used slot: the free slot released longest ago, the
        highest id among equals (get_available_slot compares with <=)."""
        taken = {s.slot for s in self.running}
        best = -1
        for i, last in enumerate(self._slot_last_used):
            if i not in taken and (best < 0 or last <= self._slot_last_used[best]):
                best = i
        return best

    def _release(self, s: Seq) -> None:
        if s.slot >= 0:
            self._slot_last_used[s.slot] = (self.clock, self._releases)
            self._releases += 1
        self.pool.release(s.held)
        self.pool.unpin(s.pinned)
        s.held, s.pinned = 0.0, []

    # -- the scheduler -------------------------------------------------------------------
    def step(self) -> Step | None:
        """Admit what fits, run one forward pass; None when nothing could run."""
        if not self.running:
            self.held.drop()
        if not self.running and self.waiting:  # idle until the head of the queue can be scheduled
            self.clock = max(self.clock, self.waiting[0].ready)
        formed = self.launches.forms_at(self.clock, bool(self.running))
        for s in self.waiting:  # what the scheduler sees when it forms this step
            if s.queued is None and s.ready <= formed:
                s.queued = formed
        while (
            self.waiting
            and len(self.running) < self.max_num_seqs
            and self.waiting[0].ready <= formed
            and self._admit(self.waiting[0])
        ):
            self.running.append(self.waiting.popleft())
            if self._slot_last_used:
                self.running[-1].slot = self._free_slot()
        if not self.running:
            return None
        emitted = self._pass(self.running, formed)
        self.counts.steps += 1
        finished = sorted((s for s in self.running if s.done), key=lambda s: s.slot)
        for s in finished:
            self._release(s)
        self.counts.finished += len(finished)
        if finished:
            self.running = [s for s in self.running if not s.done]
        return Step(emitted, finished)

    def _pass(self, running: list[Seq], formed: float) -> list[tuple[Seq, int]]:
        k, budget = self.k, self.max_num_batched_tokens
        if self._slot_last_used:  # llama-server builds its batch slot by slot, in slot order
            running = sorted(running, key=lambda s: s.slot)
        decoding = [s for s in running if not s.in_prefill]
        if self.profile.prefill_first and len(decoding) < len(running):
            decoding = []  # a prefill batch: the decoding sequences wait (EngineProfile)
        proposed = [self._propose() for _ in decoding]  # (drafted, accepted) per sequence
        verify = [
            Slice(tokens=d + 1, context=s.context, logits=d + 1, state_writes=d + 1)
            for s, (d, _) in zip(decoding, proposed, strict=True)
        ]
        budget -= sum(x.tokens for x in verify)
        chunks: list[tuple[Seq, int]] = []
        for s in running:
            if s.in_prefill and budget > 0:
                offered = min(budget, s.prompt - s.prefilled)
                n = self.layout.aligned_chunk(
                    s.prefilled, offered, s.prompt, s.junction, s.user_start
                )
                if (
                    n == 0 and budget == self.max_num_batched_tokens
                ):  # a block larger than a whole step
                    n = offered
                if n:
                    chunks.append((s, n))
                    budget -= n
                    if s.scheduled is None:  # past the step's token budget it waited
                        s.scheduled = self.clock
        slots = (
            [*(s.slot for s in decoding), *(s.slot for s, _ in chunks)]
            if self._slot_last_used
            else None
        )
        seconds = self.passes.seconds(
            verify, [(n, s.prefilled, s.prompt) for s, n in chunks], slots
        )
        checkpoints, drafting = self._checkpoint_seconds(chunks), 0.0
        if self.draft is not None:
            drafting = self.draft.seconds(k, verify) + self.draft.prefill_seconds(
                [Slice(tokens=n, context=s.prefilled, logits=0) for s, n in chunks]
            )
        p, drafts_sampled = self.profile, self.draft is not None and self.draft.samples
        sampled = (
            sum(a + 1 + d * drafts_sampled for d, a in proposed)
            if p.sampling == "per_token"
            else len(decoding)
        ) + sum(1 for s, n in chunks if s.prefilled + n == s.prompt)
        cpu = self._step_s + p.seq_overhead_ms * sampled / 1e3
        self.costs.add(self.passes.parts, drafting, checkpoints + cpu, self.pace, bool(chunks))
        seconds = (seconds + checkpoints + drafting) * self.pace
        launch_s = (
            self.passes.launch_s * self.pace
            if self.launches.overlap
            else seconds * self.passes.kernel_by_kernel  # the GPU waits on each launch
        )
        launch = self.launches.launch(formed, self.clock, launch_s, self.passes.launch_waits)
        self.held.release(launch.released)
        self.clock = max(self.clock + (seconds + cpu * self.pace), launch.launched)
        emitted = [(s, self._emit(s, a + 1)) for s, (_, a) in zip(decoding, proposed, strict=True)]
        for s, n in chunks:
            s.checkpoints |= self.layout.kept_states(
                s.prefilled, s.prefilled + n, s.prompt, s.junction
            )
            s.prefilled += n
            if not s.in_prefill:
                self._remember(s)
                emitted.append((s, self._emit(s, 1)))
        self.held.hold(emitted)
        return emitted

    def _checkpoint_seconds(self, chunks: list[tuple[Seq, int]]) -> float:
        """The context checkpoints of this step's prompt batches and admissions (CacheLayout.checkpoint)."""
        p, layout = self.profile, self.layout
        saves = sum(
            layout.checkpoint(s.prefilled, n, s.prompt, p.prefill_ubatch_tokens or n, s.user_start)
            for s, n in chunks
        )
        restores, self._restores = self._restores, 0
        state = layout.state_bytes / 1e9
        return (saves * state / p.checkpoint_save_gbps if p.checkpoint_save_gbps else 0.0) + (
            restores * state / p.checkpoint_restore_gbps if p.checkpoint_restore_gbps else 0.0
        )

    def _propose(self) -> tuple[int, int]:
        """One sequence's draft this step, counted: (tokens drafted, tokens of them accepted); it
        emits the accepted ones and the bonus token."""
        if self.k == 0 or self.acceptance is None:
            return 0, 0
        drafted, accepted = self.acceptance.propose(self.k)
        c = self.counts
        c.drafts += drafted > 0
        c.draft_tokens += drafted
        c.accepted += accepted
        for i in range(accepted):
            c.per_position[i] += 1
        return drafted, accepted

    def _emit(self, s: Seq, tokens: int) -> int:
        tokens = min(tokens, s.max_tokens - s.generated)
        s.generated += tokens
        self.counts.generation_tokens += tokens
        s.events.append(TokenEvent(t=self.clock, tokens=tokens))
        return tokens

    # -- a window (the runtime seam) -------------------------------------------------------
    def run(
        self, requests: Sequence[Request], max_concurrency: int | None = None
    ) -> list[RequestTrace]:
        """Submit `requests` at the current clock plus each one's `send_at` (all at once when
        None), at most `max_concurrency` in flight (a due request waits for one to finish); step
        until every one finishes."""
        start = self.clock
        seqs = [
            Seq(
                r.request_id,
                r.prompt_tokens,
                r.max_tokens,
                window_blocks(r, self.block_tokens),
                user_start=CHAT_TURN_TOKENS if r.chat else 0,
            )
            for r in requests
        ]
        due = [start + (r.send_at or 0.0) for r in requests]
        pending = deque(sorted(range(len(seqs)), key=lambda i: due[i]))
        cap = max_concurrency or len(seqs) or 1
        inflight: set[int] = set()
        freed_at = float("-inf")  # when a slot last freed up with the cap reached
        while pending or self.busy:
            while (
                pending and len(inflight) < cap and (due[pending[0]] <= self.clock or not self.busy)
            ):
                i = pending.popleft()  # it arrived when due (mid-step too), or when a slot freed
                if self.submit(seqs[i], max(due[i], freed_at)):
                    inflight.add(i)
            stepped = self.step()
            if self.observe is not None:
                self.observe(self)
            stuck = stepped is None and not self.running and self.waiting
            if stuck and self.waiting[0].ready <= self.clock:
                # nothing fits even in an empty pool: the start check prevents it
                for s in self.waiting:
                    s.error = "KV cache too small for this request"
                self.waiting.clear()
            full = len(inflight) >= cap
            inflight -= {i for i in inflight if seqs[i].done or seqs[i].error is not None}
            if full and len(inflight) < cap:
                freed_at = self.clock
        return [
            trace(s, start, d if r.send_at is not None else None)
            for s, r, d in zip(seqs, requests, due)
        ]
