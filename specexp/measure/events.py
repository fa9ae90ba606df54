"""What a runtime hands back: token events with timestamps, and engine counters.

Timestamps are seconds on the engine's clock: wall-clock for real servers, the virtual
clock for the simulator. Every metric is computed from these by `specexp.measure.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

from specexp.record.schema import EngineSeries


class TokenEvent(NamedTuple):
    """A chunk that carried `tokens` generated tokens, arriving at time `t`. (A named tuple: a
    window holds one per chunk of every request.)"""

    t: float
    tokens: int
    reasoning: bool = False
    """Tokens of the model's reasoning (a `reasoning_content` delta, or text inside a `<think>`
    span), not of its answer."""


@dataclass(frozen=True)
class Request:
    """One request of a measurement window."""

    request_id: str
    prompt: str
    prompt_tokens: int
    """Intended prompt length in the target's tokens (the server's count is recorded)."""
    max_tokens: int
    ignore_eos: bool = True
    temperature: float = 0.0
    thinking: bool = False
    top_p: float = 1.0
    seed: int | None = None
    """The request's own sampling seed (sent as `seed`; None: the engine's)."""
    token_ids: bool = False
    """Ask for the generated token ids beside the text, where the engine can give them (vLLM's
    `return_token_ids`): the sampled-output check reads every generated token, and a completion
    whose tokens decode to no text yet (a partial UTF-8 character) would otherwise arrive empty."""
    cache_group: str | None = None
    """Requests with the same group share a prefix of `shared_prefix_tokens` tokens."""
    shared_prefix_tokens: int = 0
    warmup: bool = False
    chat: bool = True
    """Send as a chat completion (the chat template applies); False: a plain completion."""
    send_at: float | None = None
    """Open-loop: scheduled send, seconds after the window's start (None: at once, a closed-loop burst)."""
    # -- sessions, traces and datasets (specexp.workloads.sessions / trace / datasets) --
    messages: tuple[tuple[str, str], ...] | None = None
    """A chat conversation as (role, content) pairs, sent as they are in place of `prompt`."""
    prefix_groups: tuple[tuple[str, int], ...] = ()
    """Nested shared prefixes, outermost first: (group, tokens) says the first `tokens` tokens are
    the same text for every request naming `group` (a shared system prompt, then a session's
    conversation so far). Takes the place of `cache_group` where given."""


class TaskScore(NamedTuple):
    """A task item's score (record.schema.TaskItem)."""

    score: float
    target: str | None
    response: str | None


class Sampled(NamedTuple):
    """A sampled completion's facts (record.schema.SampledOutput)."""

    prompt: str
    seed: int
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class RequestTrace:
    """What happened to one request."""

    request_id: str
    sent_at: float
    events: tuple[TokenEvent, ...]
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_prompt_tokens: int | None = None
    token_source: Literal["server", "client"] = "server"
    text: str | None = None
    token_ids: tuple[int, ...] | None = None
    """The generated token ids, where the request asked for them and the server sent them."""
    finish_reason: str | None = None
    engine_timings: dict[str, Any] | None = None
    error: str | None = None
    error_kind: str | None = None
    """http_429, http_5xx, http_4xx, timeout, stalled, connection, client, malformed_stream,
    truncated_stream or no_tokens."""
    response_id: str | None = None
    """The server's response `id` (e.g. `chatcmpl-...`), from the first chunk that has one."""
    status: int | None = None
    """HTTP status of the response (None: none came, or no HTTP was involved)."""
    send_lag_s: float | None = None
    """Actual send minus when the client could first send it (the window's start in a burst; its
    scheduled time, or the moment a max_concurrency slot freed, open-loop): the client's lag."""
    due_at: float | None = None
    """Open-loop: when the schedule had the request sent, on the `sent_at` clock (a request that
    waited for a `max_concurrency` slot left later); None in a closed-loop burst."""
    sent_wall: float | None = None
    """`sent_at` on the wall clock (Unix seconds); None on a virtual clock."""

    @cached_property
    def token_events(self) -> tuple[TokenEvent, ...]:
        """Events that carried at least one generated token (a role-only chunk does not)."""
        return tuple(e for e in self.events if e.tokens > 0)

    @property
    def first_token_at(self) -> float | None:
        return next((e.t for e in self.events if e.tokens > 0), None)

    @property
    def last_token_at(self) -> float | None:
        return next((e.t for e in reversed(self.events) if e.tokens > 0), None)


@dataclass(frozen=True)
class Counters:
    """Engine-neutral cumulative counters, as read from the engine at one moment.

    None means the engine does not expose that counter.
    """

    drafts: float | None = None
    draft_tokens: float | None = None
    accepted: float | None = None
    accepted_per_position: tuple[float | None, ...] | None = None
    """Accepted tokens per draft position; None at a position the engine did not report."""
    prompt_tokens: float | None = None
    cached_prompt_tokens: float | None = None
    generation_tokens: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    """Engine-specific gauges kept for the record (e.g. SGLang's spec_accept_length)."""

    went_back: tuple[str, ...] = ()
    """A delta's counters that were lower after the window than before it (the engine restarted,
    or a replica that counted them went away): their increase, and every speculative counter's
    if one of those went back, is unknown (None)."""

    def delta(self, before: Counters) -> Counters:
        """Counter increase over a window: self (after) minus `before`. A counter that went
        backwards has no increase to give: it is None and named in `went_back`."""
        back: list[str] = []

        def sub(name: str, a: float | None, b: float | None) -> float | None:
            if a is None:
                return None
            if a < (b or 0.0):
                back.append(name)
                return None
            return a - (b or 0.0)

        per_pos = None
        if self.accepted_per_position is not None:
            prior = before.accepted_per_position or ()
            # a position absent before the window had not been created yet (0); absent after: unknown
            per_pos = tuple(
                sub(
                    f"accepted_per_position[{i + 1}]",
                    a,
                    (prior[i] if i < len(prior) else None) or 0.0,
                )
                for i, a in enumerate(self.accepted_per_position)
            )
        spec = (
            sub("drafts", self.drafts, before.drafts),
            sub("draft_tokens", self.draft_tokens, before.draft_tokens),
            sub("accepted", self.accepted, before.accepted),
        )
        others = (
            sub("prompt_tokens", self.prompt_tokens, before.prompt_tokens),
            sub("cached_prompt_tokens", self.cached_prompt_tokens, before.cached_prompt_tokens),
            sub("generation_tokens", self.generation_tokens, before.generation_tokens),
        )
        if any(name in SPECULATIVE or name.startswith("accepted_per") for name in back):
            spec, per_pos = (None, None, None), None  # one went back: none of them is whole
        return Counters(
            *spec,
            accepted_per_position=per_pos,
            prompt_tokens=others[0],
            cached_prompt_tokens=others[1],
            generation_tokens=others[2],
            extra=dict(self.extra),
            went_back=tuple(back),
        )


SPECULATIVE = ("drafts", "draft_tokens", "accepted")
"""The counters acceptance is computed from, which only mean something together."""


@dataclass(frozen=True)
class EngineInfo:
    """What a started (or reached) engine says about itself."""

    runtime: str
    version: str | None
    kv_cache_tokens: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Point:
    """A measurement point: prompt length, concurrency and cache state."""

    prompt_tokens: int
    concurrency: int | None
    cache: str
    request_rate: float | None = None
    """Open-loop requests per second (None: a closed-loop burst of `concurrency`)."""
    turn: int | None = None
    """Turn of an agentic session (1-based); None outside sessions."""
    send: int | None = None
    """The n-th send of a shared prefix (1-based); None where requests share no prefix."""
    category: str | None = None
    """Prompt category of a dataset file; None outside datasets."""


@dataclass(frozen=True)
class ClientStats:
    """What the measuring client spent on one window (real HTTP runtimes only)."""

    cpu_s: float
    """CPU seconds of the client process(es) while the window's requests were in flight."""
    wall_s: float
    """From the window's start to its last stream's end."""
    processes: int = 1


@dataclass(frozen=True)
class Window:
    """The requests of one repeat at one point, with the counter delta around them."""

    point: Point
    traces: list[RequestTrace]
    delta: Counters
    cache_reset: bool | None = None
    """Before a cold window of a cache-reuse workload: whether the engine confirmed that it
    emptied its prefix cache (None: not asked)."""
    repeat: int = 0
    warmup: bool = False
    """A warm-up or cache-priming window: its requests are recorded and count in no figure."""
    server_start: int = 0
    """The server start it ran on (0-based; `workload.server_starts`)."""
    client: ClientStats | None = None
    telemetry: dict[str, Any] | None = None
    """The GPU's power, energy, memory, utilisation and clocks over the window (specexp.measure.telemetry),
    or why there are none (``{"source": None, "reason": ...}``); None: not sampled."""
    compiles: tuple[str, ...] | None = None
    """The engine's log lines saying it compiled a kernel during the window: () for a clean window,
    None where the engine's log cannot say (specexp.runtimes.base.Runtime.compiles_since)."""
    compiles_read: tuple[str, ...] = ()
    """What was read for `compiles`: "log" (the engine's log), "kernel_cache" (the Triton cache of a
    server specexp started; specexp.runtimes.http.kernel_cache)."""
    discarded: str | None = None
    """Why a window that was run again counts in no figure ("contaminated": the engine compiled a
    kernel during it); None for every other window."""
    sampled: dict[str, Sampled] = field(default_factory=dict)
    """A sampling workload: each request's prompt key, seed and first tokens, by request id."""
    task_items: dict[str, TaskScore] = field(default_factory=dict)
    """A task run: each item's score by `task/doc_id`."""
    task: dict[str, Any] | None = None
    """A task run: what lm-eval ran and its summary scores."""
    series: EngineSeries | None = None
    """The engine's state read at a fixed interval while the window ran (specexp.measure.engine_series)."""
    costs: dict[str, dict[str, float]] | None = None
    """What the engine's time went to during the window, seconds by phase (decode, prefill) and
    cost (the simulator's specexp.sim.costs); None where the engine cannot say."""


class RuntimeFailure(Exception):
    """A server that refused to start (`refused`) or failed while measuring (`failed`)."""

    def __init__(
        self,
        status: Literal["refused", "failed"],
        kind: str,
        message: str,
        log_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.argv: list[str] | None = None
        """The argv of the server that failed, when one was started."""
        self.status = status
        self.kind = kind
        self.message = message
        self.log_tail = log_tail
