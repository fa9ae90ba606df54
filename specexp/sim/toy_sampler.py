"""A toy sampling model, for testing specexp's answer checks (`runtime.toy_sampler`): not a language
model, and its text means nothing.

A target distribution over `VOCAB` tokens is drawn for each context (the prompt and the tokens so
far, hashed): Zipf-like logits with seeded noise, scaled by 1 / temperature and cut to top_p. A
draft's distribution is the target's with noise added to its logits, so drafts are accepted in
part and rejection sampling really runs. Decoding with `k` drafts per step:

- `lossless`: speculative sampling (Leviathan et al. 2023; Chen et al. 2023): a draft token x from
  p is kept with probability min(1, q(x) / p(x)); the first one refused is replaced by a draw from
  normalise(max(q - p, 0)); after k kept ones a bonus token is drawn from q. Every emitted token is
  distributed as the target's q, whatever the draft.
- `accept_greedy`: a drafted token is kept when it is the target's most likely token (the check of
  greedy decoding, wrongly applied at temperature > 0), else the target draws: the most likely
  token comes out too often.
- `skew`: as lossless, but the verify pass's q has `SKEW` of its probability moved onto its most
  likely token (a bug in a verify kernel's sampling): a few points, on drafted positions only.

With no drafter (k = 0) every token is drawn from q.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, Literal

import numpy as np

VOCAB = 48
ZIPF = 1.5
"""Exponent of the target's Zipf-like probabilities at temperature 1 (rank r: about (1 + r)^-1.5)."""
SKEW = 0.05
"""Probability the `skew` fault moves onto the most likely token of a verify pass."""
DRAFT_NOISE = 1.0
"""Standard deviation of the noise on the draft's logits."""
Fault = Literal["lossless", "accept_greedy", "skew"]


def _context_rng(prompt: str, prefix: tuple[int, ...], salt: str) -> np.random.Generator:
    blob = f"{salt}|{prompt}|{','.join(map(str, prefix))}".encode()
    return np.random.default_rng(int.from_bytes(hashlib.sha256(blob).digest()[:8], "big"))


def _distribution(logits: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    z = logits / max(temperature, 1e-6)
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p)
        keep = np.cumsum(p[order]) - p[order] < top_p
        mask = np.zeros_like(p, dtype=bool)
        mask[order[keep]] = True
        p = np.where(mask, p, 0.0)
        p /= p.sum()
    return p


@lru_cache(maxsize=65536)
def target(prompt: str, prefix: tuple[int, ...], temperature: float, top_p: float) -> np.ndarray:
    rng = _context_rng(prompt, prefix, "target")
    logits = -ZIPF * np.log1p(rng.permutation(VOCAB)) + rng.normal(0, 0.3, VOCAB)
    return _distribution(logits, temperature, top_p)


@lru_cache(maxsize=65536)
def draft(prompt: str, prefix: tuple[int, ...], temperature: float, top_p: float) -> np.ndarray:
    q = target(prompt, prefix, 1.0, 1.0)
    noise = _context_rng(prompt, prefix, "draft").normal(0, DRAFT_NOISE, VOCAB)
    return _distribution(np.log(q + 1e-12) + noise, temperature, top_p)


def _skewed(q: np.ndarray) -> np.ndarray:
    """`SKEW` of probability moved onto the most likely token from the others in proportion
    (a total variation distance of SKEW, where the others hold that much)."""
    top = int(np.argmax(q))
    moved = min(SKEW, 1.0 - q[top])
    out = q * (1 - moved / (1.0 - q[top]))
    out[top] = q[top] + moved
    return out


def generate(
    prompt: str,
    tokens: int,
    k: int,
    temperature: float,
    top_p: float,
    seed: int,
    fault: Fault = "lossless",
) -> list[int]:
    """`tokens` token ids sampled for `prompt` with `k` drafts per step (0: no drafter)."""
    rng = np.random.default_rng(seed)
    out: list[int] = []

    def q_at(prefix: tuple[int, ...], verify: bool) -> np.ndarray:
        q = target(prompt, prefix, temperature, top_p)
        return _skewed(q) if verify and fault == "skew" else q

    while len(out) < tokens:
        if k <= 0:
            out.append(int(rng.choice(VOCAB, p=q_at(tuple(out), False))))
            continue
        prefix = tuple(out)
        proposed: list[int] = []
        drafts: list[Any] = []
        for _ in range(k):
            p = draft(prompt, prefix + tuple(proposed), temperature, top_p)
            proposed.append(int(rng.choice(VOCAB, p=p)))
            drafts.append(p)
        for x, p in zip(proposed, drafts, strict=True):
            q = q_at(tuple(out), True)
            if fault == "accept_greedy":
                kept = x == int(np.argmax(q))
            else:
                kept = rng.random() < min(1.0, q[x] / max(p[x], 1e-12))
            if kept:
                out.append(x)
                continue
            residual = np.maximum(q - p, 0.0) if fault != "accept_greedy" else q
            out.append(int(rng.choice(VOCAB, p=residual / residual.sum())))
            break
        else:
            out.append(int(rng.choice(VOCAB, p=q_at(tuple(out), True))))
    return out[:tokens]


def text_of(ids: list[int]) -> str:
    """The toy tokens as text: one word per token."""
    return "".join(f"t{i} " for i in ids)
