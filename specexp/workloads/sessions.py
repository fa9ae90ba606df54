"""Agentic sessions: many sessions of several turns, each turn resending the whole conversation.

`concurrency` sessions run side by side behind one system prompt (`prompt_tokens` of material,
the same text for every session). Turn t of a session sends the system prompt, every earlier
message and reply, and one new message of `session.turn_tokens` (a tool result: a slice of the
source file, or prose); between turns the agent thinks for `session.think_time_s` (virtual on the
simulator's clock). Sessions advance turn by turn together: turn t of every session is one
window, so the engine counters read around it give that turn's acceptance and cached prompt
tokens, and each turn is a measurement point of its own (condition `turn`). The prefix cache is
emptied before each repeat's first turn, so turn 1 is cold and later turns find their
conversation (and every session the system prompt) cached: an engine whose cache works shows
cached prompt tokens rising with the turn.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from specexp.measure.events import Point, Request, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import WorkloadSpec
from specexp.workloads.material import filler, prose, source_file
from specexp.workloads.prompts import PromptBuilder
from specexp.workloads.window import (
    digest,
    repeats_by_concurrency,
    timed,
    warm_up,
    warmup_tokens,
)

CHARS_PER_TOKEN = 4
"""Characters per token where no tokenizer cuts the text (real servers count the tokens themselves)."""


def turn_message(workload: WorkloadSpec, key: str, turn: int, builder: PromptBuilder | None) -> str:
    """The new message of one turn: the task first, then tool results."""
    s = workload.session
    assert s is not None
    tokens = s.turn_tokens
    if s.turn_material == "source_file":
        text = source_file()
        start = int(digest(key), 16) % max(len(text) - tokens * CHARS_PER_TOKEN, 1)
        body = text[start : start + tokens * CHARS_PER_TOKEN]
    elif builder is not None:
        body = builder.material(key, tokens)
    else:
        body = filler(key, tokens) if s.turn_material == "filler" else prose(key, tokens)
    if turn == 1:
        return f"[{digest(key)}] {workload.prompt}\n\n{body}"
    return f"Tool result [{digest(key)}]:\n{body}"


def drive_sessions(
    runtime: Runtime,
    workload: WorkloadSpec,
    marker: str,
    builder: PromptBuilder | None,
    chat: bool,
    warmups: bool,
) -> Iterator[Window]:
    """One window per turn per repeat per session count; warm-up windows too with `warmups`.

    The warm-up is a session of its own, of `warmup` sessions and two turns: the first turn's prompt
    cold, then a turn's prefill onto its cached conversation, the two shapes every measured session
    sends (an engine compiling a kernel at a shape's first use does it there, not in turn 1)."""
    s = workload.session
    assert s is not None
    if workload.warmup:
        tag = f"{marker}-warmup"
        turns = min(s.turns, 2)
        for window in _turns(
            runtime,
            workload,
            tag,
            workload.warmup,
            turns,
            builder,
            chat,
            f"{tag}-system",
            warmup=True,
        ):
            if warmups:
                yield window
    for sessions, repeat in repeats_by_concurrency(workload):
        tag = f"{marker}-c{sessions}-r{repeat}"
        yield from _turns(
            runtime, workload, tag, sessions, s.turns, builder, chat, f"{marker}-system", repeat
        )


def _turns(
    runtime: Runtime,
    workload: WorkloadSpec,
    tag: str,
    sessions: int,
    turns: int,
    builder: PromptBuilder | None,
    chat: bool,
    system_key: str,
    repeat: int = 0,
    warmup: bool = False,
) -> Iterator[Window]:
    """`sessions` sessions of `turns` turns behind the system prompt `system_key`; with `warmup`,
    windows that count in no figure (and no cache emptied before them)."""
    s = workload.session
    assert s is not None
    out = workload.output_tokens
    system = builder.material(system_key, workload.prompt_tokens) if builder is not None else ""
    history: list[list[tuple[str, str]]] = [[("system", system)] for _ in range(sessions)]
    context = workload.prompt_tokens  # tokens every session has sent or received so far
    for turn in range(1, turns + 1):
        if turn > 1:
            runtime.idle(s.think_time_s)
        reqs = []
        for i in range(sessions):
            rid = f"{tag}-s{i}-t{turn}"
            history[i].append(("user", turn_message(workload, rid, turn, builder)))
            reqs.append(
                _request(
                    workload,
                    rid,
                    tuple(history[i]),
                    context,
                    s.turn_tokens,
                    (system_key, workload.prompt_tokens),
                    f"{tag}-s{i}",
                    chat,
                    warmup=warmup,
                )
            )
        point = Point(context + s.turn_tokens, sessions, "cold" if turn == 1 else "warm", turn=turn)
        if warmup:
            window = warm_up(runtime, reqs, point)
        else:
            reset = runtime.reset_prefix_cache() if turn == 1 else None
            window = timed(runtime, reqs, point, repeat=repeat, reset=reset)
        for i, trace in enumerate(window.traces):
            history[i].append(("assistant", trace.text or ""))
        counted = [t.completion_tokens for t in window.traces if t.completion_tokens is not None]
        context += s.turn_tokens + int(statistics.median(counted) if counted else out)
        yield window


def _request(
    workload: WorkloadSpec,
    rid: str,
    messages: tuple[tuple[str, str], ...],
    context: int,
    new_tokens: int,
    system: tuple[str, int],
    session: str,
    chat: bool,
    warmup: bool = False,
) -> Request:
    """One turn's request: the conversation so far (`context` tokens, of which the system prompt
    is shared by every session) plus the new message; all of it is resent by the session's later
    turns."""
    flat = "\n\n".join(content for _, content in messages)
    return Request(
        request_id=rid,
        prompt=flat,
        prompt_tokens=context + new_tokens,
        max_tokens=warmup_tokens(workload) if warmup else workload.output_tokens,
        warmup=warmup,
        ignore_eos=workload.ignore_eos,
        temperature=workload.temperature,
        thinking=workload.thinking,
        cache_group=session,
        shared_prefix_tokens=context,
        chat=chat,
        # the whole prompt belongs to the session: every later turn resends it
        messages=messages if chat else None,
        prefix_groups=(system, (session, context + new_tokens)),
    )
