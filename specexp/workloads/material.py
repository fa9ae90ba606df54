"""Deterministic prompt material: a real source file, real prose, and random words.

`source_file` is real Python, the same text for everyone; `prose` is real written prose starting
where a marker says, so every request or cache group gets its own text and no prefix cache can
serve one with another's. `filler` is random words, kept as a named option only
(`workload.material=filler`): prompts of random tokens overstate speculative throughput
(docs/studies.md, SPEED-Bench), and records mark them `prompt_text: random`. Lengths in a
model's own tokens are cut by the server's tokenizer at run time (specexp.workloads.prompts).
"""

from __future__ import annotations

import functools
import hashlib
import random
from pathlib import Path

_WORDS = (
    "the",
    "engine",
    "schedules",
    "every",
    "request",
    "into",
    "a",
    "batch",
    "while",
    "memory",
    "bandwidth",
    "bounds",
    "decode",
    "and",
    "compute",
    "bounds",
    "prefill",
    "so",
    "drafts",
    "verify",
    "tokens",
    "cache",
    "blocks",
    "hold",
    "keys",
    "values",
    "for",
    "each",
    "layer",
    "of",
    "model",
    "weights",
    "move",
    "from",
    "device",
    "to",
    "cores",
    "per",
    "step",
    "with",
    "some",
    "overhead",
    "river",
    "mountain",
    "orchard",
    "lantern",
    "harbor",
    "meadow",
    "copper",
    "violet",
    "signal",
    "quiet",
    "rapid",
    "ancient",
    "northern",
    "hollow",
    "bright",
    "measured",
    "careful",
    "distant",
)


DATA = Path(__file__).resolve().parent / "data"
SOURCE_FILE = DATA / "source_file.py.txt"
"""The edit-heavy source: two real modules of specexp's HTTP client (`runtimes/client.py` and
`runtimes/http.py` as they stood at version 2 of the workloads), frozen so every machine sends the
same text."""
PROSE = DATA / "prose.txt"
"""Real prose: the paragraphs of specexp's own documentation (docs/*.md at version 2 of the
workloads, tables and code left out), 260 paragraphs, about 8,900 words."""


@functools.cache
def source_file() -> str:
    """The edit-heavy source file: real Python, the same text on every machine."""
    return SOURCE_FILE.read_text(encoding="utf-8")


@functools.cache
def _paragraphs() -> tuple[str, ...]:
    return tuple(p for p in PROSE.read_text(encoding="utf-8").split("\n\n") if p.strip())


def prose(marker: str, words: int) -> str:
    """At least `words` words of real prose, starting at a paragraph chosen by `marker` (so two
    markers' texts differ from their first word and no prefix cache serves one with the other),
    going on paragraph by paragraph and round to the start."""
    paragraphs = _paragraphs()
    seed = int.from_bytes(hashlib.sha256(marker.encode()).digest()[:8], "big")
    out: list[str] = []
    count, i = 0, seed % len(paragraphs)
    while count < words:
        out.append(paragraphs[i])
        count += len(paragraphs[i].split())
        i = (i + 1) % len(paragraphs)
    return "\n\n".join(out)


def filler(marker: str, words: int) -> str:
    """`words` random words seeded by `marker` (`workload.material=filler`): different text for
    every marker, and no text anyone would write; records say `prompt_text: random`."""
    seed = int.from_bytes(hashlib.sha256(marker.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    out, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 16):
            out.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)
