"""A reasoning model's stream split into its reasoning and its answer, as servers send it (a separate
`reasoning_content`, or `<think>` spans in the text, whole or a character a chunk), and the
figures of each: reasoning tokens, time to the answer, and each stream's decode rate; on the
simulator with `workload.thinking_tokens`, and in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specexp.measure.reasoning_streams import (
    answer_tps,
    reasoning_tokens,
    reasoning_tps,
    time_to_answer_s,
)
from specexp.runtimes.http.reasoning import split_chunk, think_spans
from specexp.runtimes.http.stream import RawStream, to_trace
from tests.conftest import run_specexp


def _delta(**delta: str) -> dict[str, Any]:
    return {"choices": [{"delta": delta}]}


def _stream(chunks: list[dict[str, Any]], step: float = 0.1) -> RawStream:
    raw = RawStream(sent_at=0.0)
    raw.chunks = [(0.5 + i * step, c) for i, c in enumerate(chunks)]
    raw.done = True
    return raw


def test_the_servers_own_split_is_read_from_each_engines_stream() -> None:
    assert split_chunk(_delta(reasoning_content="hmm")) == ("hmm", "")  # vLLM, llama.cpp
    assert split_chunk(_delta(reasoning="hmm")) == ("hmm", "")  # vLLM's newer field
    assert split_chunk(_delta(content="Blue.")) == ("", "Blue.")
    assert split_chunk({"message": {"thinking": "hmm", "content": ""}}) == ("hmm", "")  # Ollama


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ("<think>why</think>Blue.", [(0, 18)]),
        ("why</think>Blue.", [(0, 11)]),  # the template opened it in the prompt
        ("<think>still thinking", [(0, 21)]),  # cut off before it closed
        ("Blue, no thought.", []),
    ],
)
def test_think_spans(text: str, spans: list[tuple[int, int]]) -> None:
    assert think_spans(text) == spans


def test_a_reasoning_content_stream_gives_both_streams_figures() -> None:
    chunks = [_delta(reasoning_content="r") for _ in range(5)] + [
        _delta(content="a") for _ in range(11)
    ]
    trace = to_trace("r0", _stream(chunks))
    assert reasoning_tokens(trace) == 5
    assert time_to_answer_s(trace) == pytest.approx(0.5 + 5 * 0.1)  # sent at 0, answer at 1.0 s
    assert reasoning_tps(trace) == pytest.approx(4 / 0.4)  # 5 tokens over 0.4 s: (5 - 1) / 0.4
    assert answer_tps(trace) == pytest.approx(10 / 1.0)


def test_think_tags_in_the_text_a_character_a_chunk_are_reasoning_with_their_span() -> None:
    """A server without a reasoning parser streams the tags as text, here a byte token a chunk."""
    text = "<think>ok</think>\n\nyes"
    trace = to_trace("r0", _stream([_delta(content=ch) for ch in text]))
    assert reasoning_tokens(trace) == len("<think>ok</think>")
    # the answer begins with the first chunk outside the span (the new lines count as answer)
    assert time_to_answer_s(trace) == pytest.approx(0.5 + len("<think>ok</think>") * 0.1)
    assert trace.text == text  # the text is kept whole


def test_a_request_that_does_not_reason_has_no_thinking_figures() -> None:
    trace = to_trace("r0", _stream([_delta(content="a") for _ in range(4)]))
    assert reasoning_tokens(trace) is None and time_to_answer_s(trace) is None
    assert answer_tps(trace) is None and reasoning_tps(trace) is None


@pytest.fixture(scope="module")
def thinking_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("thinking")
    done = run_specexp(
        "-m",
        "workload=short_chat",
        "workload.thinking_tokens=120",
        "drafter=none,mtp",
        "k=3",
        f"hydra.sweep.dir={out}",
    )
    assert done.returncode == 0, done.stderr
    return out


def test_the_simulated_model_reasons_for_the_tokens_it_was_given(thinking_sweep: Path) -> None:
    lines = [json.loads(x) for x in (thinking_sweep / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        m = line["metrics"]
        # a verify pass that crosses into the answer is the answer's: up to k tokens fewer
        assert 120 - 3 <= m["reasoning_tokens"] <= 120
        assert m["time_to_answer_s"] > m["ttft_s"]
        assert m["reasoning_tps"] > 0 and m["answer_tps"] > 0
    report = (thinking_sweep / "measurements.md").read_text()
    section = report[report.index("## Reasoning and answer") :]
    assert "reasoning vs none" in section and "answer vs none" in section


def test_without_thinking_tokens_the_simulated_model_answers_at_once(tmp_path: Path) -> None:
    done = run_specexp(
        "-m", "workload=short_chat", "workload.output_tokens=32", f"hydra.sweep.dir={tmp_path}"
    )
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert line["metrics"]["reasoning_tokens"] is None
    assert "## Reasoning and answer" not in (tmp_path / "measurements.md").read_text()
