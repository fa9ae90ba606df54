"""What the simulated engine keeps of each request (`Seq`), the counters it exports (`Counts`),
what one step did (`Step`), and how a request enters it and leaves it: its prompt's cache-block
keys (`window_blocks`) and its token events as a RequestTrace (`trace`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from specexp.measure.events import Counters, Request, RequestTrace, TokenEvent


@dataclass(eq=False)
class Seq:
    """One request inside the engine."""

    request_id: str
    prompt: int
    max_tokens: int
    blocks: Sequence[Hashable] = ()
    """Keys of the prompt's full cache blocks, chained (see KvPool)."""
    arrived: float = 0.0
    """Engine clock at submission."""
    ready: float = 0.0
    """Engine clock from which it can be scheduled (arrival + the engine's per-request cost)."""
    queued: float | None = None
    """Engine clock at which the scheduler first saw it: the first step boundary once it is ready
    (vLLM's engine core takes new requests in between steps and stamps them queued then)."""
    scheduled: float | None = None
    """Engine clock at which the scheduler first took it."""
    cached: int = 0
    prefilled: int = 0
    generated: int = 0
    held: float = 0.0
    """KV pool bytes reserved while it runs."""
    pinned: list[Hashable] = field(default_factory=list)
    slot: int = -1
    """The llama-server slot holding it (batching: slots), which is its sequence id."""
    checkpoints: set[int] = field(default_factory=set)
    """Block counts after which a hybrid model keeps its recurrent state (CacheLayout.kept_states)."""
    junction: int = 0
    """Block count where its KV hit ran past its state hit: a hybrid model keeps the state there."""
    user_start: int = 0
    """Prompt tokens before its user message (a chat prompt's turn opening; 0: none)."""
    events: list[TokenEvent] = field(default_factory=list)
    error: str | None = None

    @property
    def context(self) -> int:
        return self.prefilled + self.generated

    @property
    def in_prefill(self) -> bool:
        return self.prefilled < self.prompt

    @property
    def done(self) -> bool:
        return self.generated >= self.max_tokens


@dataclass
class Counts:
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: list[int] = field(default_factory=list)
    prompt_tokens: int = 0
    """Prompt tokens computed (cache misses)."""
    cached_prompt_tokens: int = 0
    generation_tokens: int = 0
    prefix_queries: int = 0
    """Prompt tokens looked up in the prefix cache (0 with prefix caching off)."""
    finished: int = 0
    steps: int = 0

    def counters(self, spec: bool) -> Counters:
        """The counters a vLLM server exports (the speculative ones only where it drafts: `spec`)."""
        return Counters(
            drafts=float(self.drafts) if spec else None,
            draft_tokens=float(self.draft_tokens) if spec else None,
            accepted=float(self.accepted) if spec else None,
            accepted_per_position=tuple(float(x) for x in self.per_position) if spec else None,
            prompt_tokens=float(self.prompt_tokens),
            cached_prompt_tokens=float(self.cached_prompt_tokens),
            generation_tokens=float(self.generation_tokens),
        )


@dataclass(frozen=True)
class Step:
    """What one step did: (sequence, tokens) emitted, and the sequences it finished."""

    emitted: list[tuple[Seq, int]]
    finished: list[Seq]


def window_blocks(r: Request, block: int) -> list[Hashable]:
    """Block keys of a window request: blocks inside the shared prefix of its cache group are
    the group's (the group's prefix is one text), the rest its own. With nested `prefix_groups`
    a block is the innermost group's whose prefix covers it (a shared system prompt, then a
    session's conversation so far)."""
    if r.prefix_groups:

        def owner(j: int) -> Hashable:
            return next(
                ((g, j) for g, upto in r.prefix_groups if (j + 1) * block <= upto),
                (r.request_id, j),
            )

        return [owner(j) for j in range(r.prompt_tokens // block)]
    shared = r.shared_prefix_tokens if r.cache_group is not None else 0
    return [
        (r.cache_group, j) if (j + 1) * block <= shared else (r.request_id, j)
        for j in range(r.prompt_tokens // block)
    ]


def trace(s: Seq, start: float, due: float | None = None) -> RequestTrace:
    if s.error is not None and not s.events:
        return RequestTrace(
            request_id=s.request_id,
            sent_at=s.arrived or start,
            events=(),
            prompt_tokens=s.prompt,
            completion_tokens=0,
            cached_prompt_tokens=0,
            finish_reason=None,
            error=s.error,
            due_at=due,
        )
    return RequestTrace(
        request_id=s.request_id,
        sent_at=s.arrived,
        events=tuple(s.events),
        prompt_tokens=s.prompt,
        completion_tokens=s.generated,
        cached_prompt_tokens=s.cached,
        finish_reason="length",
        engine_timings=engine_timings(s),
        error=s.error,
        due_at=due,
    )


def engine_timings(s: Seq) -> dict[str, float] | None:
    """What vLLM's per-request metrics would say of it (specexp.measure.ttft_parts): the wait from
    the step boundary where the scheduler first saw it to its first scheduling, and from there to
    the first token. (The front end's cost and the wait for the step under way when it was ready
    are the client's TTFT less these, as in vLLM.)"""
    if s.scheduled is None or not s.events:
        return None
    return {
        "queue_time_ms": round((s.scheduled - (s.queued or s.scheduled)) * 1e3, 6),
        "time_to_first_token_ms": round((s.events[0].t - s.scheduled) * 1e3, 6),
    }


class HeldTokens:
    """A step's token events that leave the engine only once the next step is launched (an engine
    profile's `async_output`): vLLM's engine core builds step N's outputs after it has launched step
    N + 1, so a step launched kernel by kernel holds back the tokens of the step before it."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._held: list[tuple[Seq, int]] = []

    def hold(self, emitted: Sequence[tuple[Seq, int]]) -> None:
        """The events this step just emitted wait for the next step's launch."""
        if self.enabled:
            self._held = [(s, len(s.events) - 1) for s, _ in emitted]

    def release(self, launched: float) -> None:
        """The next step is launched at engine time `launched`: the held tokens leave then (or when
        they were emitted, if later)."""
        for s, i in self._held:
            event = s.events[i]
            if launched > event.t:
                s.events[i] = event._replace(t=launched)
        self._held = []

    def drop(self) -> None:
        """No step follows: the held tokens left when their pass ended."""
        self._held = []
