"""A record says when its prompts came out longer than the point asked for (specexp.run.job): a
server counts the workload's instruction and the chat template too, and a point shorter than those
alone cannot be cut to (the H200's 64- and 72-token points both ran at 165 tokens)."""

from __future__ import annotations

from specexp.measure.events import Counters, Point, RequestTrace, TokenEvent, Window
from specexp.run.job import prompt_length_notes


def window(asked: int, sent: int) -> Window:
    trace = RequestTrace(
        request_id="r",
        sent_at=0.0,
        events=(TokenEvent(0.02, 1),),
        prompt_tokens=sent,
        completion_tokens=1,
    )
    return Window(Point(prompt_tokens=asked, concurrency=1, cache="cold"), [trace], Counters())


def test_a_point_the_instruction_alone_outgrows_is_noted() -> None:
    (note,) = prompt_length_notes([window(64, 165), window(512, 512)])
    assert note.startswith("64-token prompts asked for, 165 sent")


def test_a_prompt_within_a_few_tokens_of_its_point_is_not() -> None:
    assert prompt_length_notes([window(512, 511), window(4096, 4100), window(16, 20)]) == []
