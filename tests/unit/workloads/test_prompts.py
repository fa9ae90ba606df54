"""Prompts cut to the length they promise as the server counts them, chat template included
(specexp.workloads.prompts): the material moves by what the server's count says, never past the
promise where a shorter prompt can be had, and a cache group's requests share their material."""

from __future__ import annotations

import re

import pytest

from specexp.spec.workload import WorkloadSpec
from specexp.workloads.prompts import PromptBuilder

TEMPLATE = 23
"""Tokens a chat template adds around the user message (more than the builder's estimate)."""


class PairTokenizer:
    """A tokenizer that merges two letters into one token: a cut can join its neighbours, as BPE
    does, so a prompt's count is not the sum of its parts."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.pieces: list[str] = []

    def tokenize(self, text: str) -> list[int]:
        ids = []
        for piece in re.findall(r"[a-z]{1,2}|.", text, flags=re.S):
            if piece not in self.vocab:
                self.vocab[piece] = len(self.pieces)
                self.pieces.append(piece)
            ids.append(self.vocab[piece])
        return ids

    def detokenize(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def count_chat(self, text: str) -> int:
        return len(self.tokenize(text)) + TEMPLATE


def builder(material: str = "filler", counted: bool = True) -> tuple[PromptBuilder, PairTokenizer]:
    tok = PairTokenizer()
    workload = WorkloadSpec(
        name="t",
        version=1,
        prompt="Summarize the text above.",
        material=material,
        output_tokens=8,
    )
    count = tok.count_chat if counted else None
    return PromptBuilder(workload, tok.tokenize, tok.detokenize, count), tok


@pytest.mark.parametrize("tokens", [64, 300, 1000, 2048])
@pytest.mark.parametrize("material", ["prose", "filler", "source_file"])
def test_a_prompt_is_the_promised_length_as_the_server_counts_it(
    tokens: int, material: str
) -> None:
    build, tok = builder(material)
    for i in range(5):
        assert tok.count_chat(build(f"req-{i}", tokens, None, 0)) == tokens


def test_without_the_servers_count_the_template_is_an_estimate() -> None:
    """The reason for counting: the builder's estimate misses a template of 23 tokens."""
    build, tok = builder(counted=False)
    assert tok.count_chat(build("req-0", 1000, None, 0)) != 1000


def test_a_prompt_is_never_longer_than_promised_when_a_shorter_one_can_be_had() -> None:
    """A count that adds one more token than a cut moves (merges at the edge) cannot reach the
    promise exactly; the prompt then stays under it."""
    build, tok = builder()
    counts = []
    for tokens in range(400, 440):
        prompt = build(f"r{tokens}", tokens, None, 0)
        counts.append(tokens - tok.count_chat(prompt))
    assert min(counts) >= 0 and counts.count(0) >= len(counts) * 0.9


def test_a_cache_groups_requests_share_their_material() -> None:
    build, tok = builder()
    first, second = build("cold", 800, "g", 780), build("warm", 800, "g", 780)
    assert tok.count_chat(first) == 800
    shared = first.rsplit("[", 1)[0]
    assert second.startswith(shared) and len(shared) > 0.9 * len(first)


def test_prose_is_real_text_with_its_own_start_for_every_request() -> None:
    """Two requests' prose differs from its first words (no prefix cache serves one with the
    other's), and every word is from written text, not a random draw of a word list."""
    from specexp.workloads.material import PROSE, prose

    b, _ = builder("prose")
    first, second = (b(f"r{i}", 600, None, 0) for i in (1, 2))
    body = [p.split("\n", 1)[1].rsplit("\n\n", 1)[0] for p in (first, second)]
    assert body[0][:80] != body[1][:80]
    corpus = PROSE.read_text(encoding="utf-8")
    for text in (prose("a", 2000), prose("b", 50)):
        for paragraph in text.split("\n\n"):
            assert paragraph in corpus
