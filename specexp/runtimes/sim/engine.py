"""A discrete-event serving engine on a virtual clock.

Continuous batching as vLLM's V1 scheduler does it: every step is one forward pass holding
the decode (or verify) tokens of every running sequence plus prefill chunks up to the token
budget. With a drafter, every decode step drafts k tokens per sequence, verifies k + 1 in
the target pass, and emits the accepted prefix plus one bonus token. A request is admitted
only while the KV pool can hold it whole (prompt, output and draft lookahead, plus its
recurrent state), so KV capacity limits concurrency; cached prefixes are evicted, least
recently used first, to make room. The engine keeps the same counters a vLLM server exports.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from specexp.events import Counters, Request, RequestTrace, TokenEvent
from specexp.roofline.costmodel import CostModel, Slice
from specexp.runtimes.sim.drafting import AcceptanceModel, DraftCost
from specexp.runtimes.sim.kvcache import CacheLayout, KvPool
from specexp.runtimes.sim.memory import MemoryPlan


@dataclass
class _Seq:
    request: Request
    sent_at: float
    cached: int
    prefilled: int
    generated: int = 0
    held: float = 0.0
    events: list[TokenEvent] = field(default_factory=list)

    @property
    def prompt(self) -> int:
        return self.request.prompt_tokens

    @property
    def context(self) -> int:
        return self.prefilled + self.generated

    @property
    def in_prefill(self) -> bool:
        return self.prefilled < self.prompt

    @property
    def done(self) -> bool:
        return self.generated >= self.request.max_tokens


@dataclass
class _Counts:
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generation_tokens: int = 0


class SimEngine:
    """One simulated server: a cost model, a drafter, a KV pool with a prefix cache, and a clock."""

    def __init__(
        self,
        target: CostModel,
        draft: DraftCost | None,
        acceptance: AcceptanceModel | None,
        k: int,
        *,
        max_num_batched_tokens: int,
        max_num_seqs: int,
        prefix_caching: bool,
        cache_block_tokens: int,
        layout: CacheLayout | None = None,
        memory: MemoryPlan | None = None,
    ) -> None:
        self.target = target
        self.draft = draft
        self.acceptance = acceptance
        self.k = k if draft is not None else 0
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.prefix_caching = prefix_caching
        self.cache_block_tokens = cache_block_tokens
        self.layout = layout or CacheLayout.build(
            enabled=prefix_caching, hits=True, block=cache_block_tokens,
            max_num_batched_tokens=max_num_batched_tokens, state_bytes=0.0,
        )
        self.memory = memory
        self.pool = KvPool(memory.kv_bytes if memory is not None else float("inf"))
        self.clock = 0.0
        self.counts = _Counts(per_position=[0] * self.k)

    def counters(self) -> Counters:
        c = self.counts
        spec = self.k > 0
        return Counters(
            drafts=float(c.drafts) if spec else None,
            draft_tokens=float(c.draft_tokens) if spec else None,
            accepted=float(c.accepted) if spec else None,
            accepted_per_position=tuple(float(x) for x in c.per_position) if spec else None,
            prompt_tokens=float(c.prompt_tokens),
            cached_prompt_tokens=float(c.cached_prompt_tokens),
            generation_tokens=float(c.generation_tokens),
        )

    def reset_prefix_cache(self) -> None:
        self.pool.clear()

    def run(self, requests: Sequence[Request]) -> list[RequestTrace]:
        """Send `requests` all at once at the current clock; run until every one finishes."""
        start = self.clock
        errors = {r.request_id: self._rejected(r) for r in requests}
        seqs = [_Seq(request=r, sent_at=start, cached=0, prefilled=0) for r in requests if not errors[r.request_id]]
        waiting: deque[_Seq] = deque(seqs)
        running: list[_Seq] = []
        while waiting or running:
            while waiting and len(running) < self.max_num_seqs and self._admit(waiting[0]):
                running.append(waiting.popleft())
            if not running:  # nothing fits even in an empty pool: cannot happen after the start check
                for s in waiting:
                    errors[s.request.request_id] = "KV cache too small for this request"
                break
            self._step(running)
            for s in running:
                if s.done:
                    self._finish(s)
            running = [s for s in running if not s.done]
        by_id = {s.request.request_id: s for s in seqs}
        return [self._trace(by_id.get(r.request_id), r, start, errors[r.request_id]) for r in requests]

    def _rejected(self, request: Request) -> str | None:
        """Why the server answers this request with an error (400), if it does."""
        limit = self.memory.max_model_len if self.memory is not None else 0
        if limit and request.prompt_tokens + request.max_tokens > limit:
            return (f"prompt ({request.prompt_tokens:,} tokens) + max_tokens ({request.max_tokens:,}) exceeds "
                    f"max_model_len {limit:,}")
        return None

    def _admit(self, s: _Seq) -> bool:
        """Reserve the pool for `s` and look up its cached prefix; False: it has to wait."""
        r = s.request
        cached = 0
        stored = self.pool.lookup(r.cache_group) if self.prefix_caching and r.cache_group is not None else None
        if stored is not None:
            cached = self.layout.reusable(stored[0], stored[1], r.shared_prefix_tokens, r.prompt_tokens)
        need = 0.0
        if self.memory is not None:
            need = self.memory.need(r.prompt_tokens - cached + r.max_tokens + self.k)
        if not self.pool.reserve(need, pin=r.cache_group if cached else None):
            return False
        s.cached = s.prefilled = cached
        s.held = need
        self.counts.cached_prompt_tokens += cached
        self.counts.prompt_tokens += r.prompt_tokens - cached
        return True

    def _finish(self, s: _Seq) -> None:
        r = s.request
        self.pool.release(s.held, pin=r.cache_group if s.cached else None)
        if self.prefix_caching and r.cache_group is not None and r.shared_prefix_tokens:
            prefix = r.shared_prefix_tokens
            nbytes = 0.0
            if self.memory is not None:
                nbytes = prefix * (self.memory.token_bytes - self.layout.snapshot_bytes_per_token)
                nbytes += self.layout.snapshots(r.prompt_tokens) * self.target.state_bytes
            self.pool.store(r.cache_group, prefix, r.prompt_tokens, nbytes)

    def _step(self, running: list[_Seq]) -> None:
        budget = self.max_num_batched_tokens
        decoding = [s for s in running if not s.in_prefill]
        verify = [Slice(tokens=self.k + 1, context=s.context, logits=self.k + 1, state_writes=self.k + 1)
                  for s in decoding]
        budget -= sum(v.tokens for v in verify)
        chunks: list[tuple[_Seq, int]] = []
        for s in running:
            if s.in_prefill and budget > 0:
                n = min(budget, s.prompt - s.prefilled)
                chunks.append((s, n))
                budget -= n
        slices = verify + [
            Slice(tokens=n, context=s.prefilled, logits=int(s.prefilled + n == s.prompt)) for s, n in chunks
        ]
        seconds = self.target.pass_seconds(slices)
        if self.draft is not None and verify:
            seconds += self.draft.seconds(self.k, verify)
        self.clock += seconds
        for s in decoding:
            self._emit(s, self._verify())
        for s, n in chunks:
            s.prefilled += n
            if not s.in_prefill:
                self._emit(s, 1)

    def _verify(self) -> int:
        """Tokens one sequence emits from one decode step: accepted drafts + the bonus token."""
        if self.k == 0 or self.acceptance is None:
            return 1
        accepted = self.acceptance.draw(self.k)
        c = self.counts
        c.drafts += 1
        c.draft_tokens += self.k
        c.accepted += accepted
        for i in range(accepted):
            c.per_position[i] += 1
        return accepted + 1

    def _emit(self, s: _Seq, tokens: int) -> None:
        tokens = min(tokens, s.request.max_tokens - s.generated)
        s.generated += tokens
        self.counts.generation_tokens += tokens
        s.events.append(TokenEvent(t=self.clock, tokens=tokens))

    def _trace(self, s: _Seq | None, r: Request, start: float, error: str | None) -> RequestTrace:
        if s is None:
            return RequestTrace(request_id=r.request_id, sent_at=start, events=(), prompt_tokens=r.prompt_tokens,
                                completion_tokens=0, cached_prompt_tokens=0, finish_reason=None, error=error)
        return RequestTrace(
            request_id=r.request_id,
            sent_at=s.sent_at,
            events=tuple(s.events),
            prompt_tokens=s.prompt,
            completion_tokens=s.generated,
            cached_prompt_tokens=s.cached,
            finish_reason="length",
            error=error,
        )
