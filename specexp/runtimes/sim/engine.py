"""A discrete-event serving engine on a virtual clock.

Continuous batching as vLLM's V1 scheduler does it: every step is one forward pass holding
the decode (or verify) tokens of every running sequence plus prefill chunks up to the token
budget. With a drafter, every decode step drafts k tokens per sequence, verifies k + 1 in
the target pass, and emits the accepted prefix plus one bonus token. The engine keeps the
same counters a vLLM server exports.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from specexp.events import Counters, Request, RequestTrace, TokenEvent
from specexp.runtimes.sim.costmodel import CostModel, Slice
from specexp.runtimes.sim.drafting import AcceptanceModel, DraftCost


@dataclass
class _Seq:
    request: Request
    sent_at: float
    cached: int
    prefilled: int
    generated: int = 0
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
    """One simulated server: a cost model, a drafter, a prefix cache and a clock."""

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
    ) -> None:
        self.target = target
        self.draft = draft
        self.acceptance = acceptance
        self.k = k if draft is not None else 0
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.prefix_caching = prefix_caching
        self.cache_block_tokens = cache_block_tokens
        self.clock = 0.0
        self.counts = _Counts(per_position=[0] * self.k)
        self._prefixes: dict[str, int] = {}

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
        self._prefixes.clear()

    def run(self, requests: Sequence[Request]) -> list[RequestTrace]:
        """Send `requests` all at once at the current clock; run until every one finishes."""
        start = self.clock
        seqs = [self._admit(r, start) for r in requests]
        waiting, running = deque(seqs), []
        while waiting or running:
            while waiting and len(running) < self.max_num_seqs:
                running.append(waiting.popleft())
            self._step(running)
            running = [s for s in running if not s.done]
        return [self._trace(s) for s in seqs]

    def _admit(self, request: Request, now: float) -> _Seq:
        cached = 0
        if self.prefix_caching and request.cache_group is not None:
            stored = self._prefixes.get(request.cache_group, 0)
            usable = min(stored, request.shared_prefix_tokens, request.prompt_tokens - 1)
            cached = usable - usable % self.cache_block_tokens
        self.counts.cached_prompt_tokens += cached
        self.counts.prompt_tokens += request.prompt_tokens - cached
        return _Seq(request=request, sent_at=now, cached=cached, prefilled=cached)

    def _step(self, running: list[_Seq]) -> None:
        budget = self.max_num_batched_tokens
        decoding = [s for s in running if not s.in_prefill]
        verify = [Slice(tokens=self.k + 1, context=s.context, logits=self.k + 1) for s in decoding]
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
                self._remember_prefix(s.request)
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

    def _remember_prefix(self, request: Request) -> None:
        if self.prefix_caching and request.cache_group is not None:
            known = self._prefixes.get(request.cache_group, 0)
            self._prefixes[request.cache_group] = max(known, request.shared_prefix_tokens)

    def _trace(self, s: _Seq) -> RequestTrace:
        return RequestTrace(
            request_id=s.request.request_id,
            sent_at=s.sent_at,
            events=tuple(s.events),
            prompt_tokens=s.prompt,
            completion_tokens=s.generated,
            cached_prompt_tokens=s.cached,
            finish_reason="length",
        )
