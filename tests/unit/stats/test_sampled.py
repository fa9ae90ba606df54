"""The sampled-output test (specexp.stats.sampled): honest engines pass at the stated false-alarm
rate over repeated seeds, and the planted faults of the simulator's toy sampler are caught at the
N docs/answers.md recommends (1,000 completions of each of 4 prompts)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specexp.sim.toy_sampler import generate
from specexp.stats.sampled import DIFFERS, NOT_ENOUGH, SAME, compare_samples

RECOMMENDED = 1000
PROMPTS = 4
POSITIONS = 4


def toy_arm(k: int, fault: str, salt: int, temperature: float, n: int = RECOMMENDED) -> dict:
    return {
        f"p{p}": [
            [
                str(t)
                for t in generate(
                    f"prompt {p}",
                    POSITIONS,
                    k,
                    temperature,
                    1.0,
                    (salt * 1_000_003 + p * 100_003 + j) % 2**31,
                    fault,  # type: ignore[arg-type]
                )
            ]
            for j in range(n)
        ]
        for p in range(PROMPTS)
    }


@pytest.fixture(scope="module")
def baselines() -> dict[float, dict]:
    return {t: toy_arm(0, "lossless", 1, t) for t in (0.7, 1.0)}


@pytest.mark.parametrize("temperature", [0.7, 1.0])
@pytest.mark.parametrize("fault", ["skew", "accept_greedy"])
def test_a_lossy_engine_is_caught_at_the_recommended_n(
    baselines: dict, fault: str, temperature: float
) -> None:
    """`skew` moves 5 points of probability onto the most likely token in verify passes;
    `accept_greedy` keeps a drafted token whenever it is the target's most likely one."""
    drafted = toy_arm(3, fault, 2, temperature)
    result = compare_samples(baselines[temperature], drafted, positions=POSITIONS, seed=7)
    assert result.verdict == DIFFERS and result.p_value < result.alpha
    assert result.samples == (RECOMMENDED * PROMPTS, RECOMMENDED * PROMPTS)


def test_an_honest_engine_with_partial_acceptance_passes(baselines: dict) -> None:
    drafted = toy_arm(3, "lossless", 2, 0.7)
    result = compare_samples(baselines[0.7], drafted, positions=POSITIONS, seed=7)
    assert result.verdict == SAME and result.detectable_shift is not None
    assert result.detectable_shift <= 0.05


def test_too_few_samples_say_so_rather_than_same() -> None:
    small = toy_arm(0, "lossless", 1, 1.0, n=60)
    result = compare_samples(small, toy_arm(3, "lossless", 2, 1.0, n=60), positions=POSITIONS)
    assert result.verdict == NOT_ENOUGH and result.detectable_shift > 0.05


def _markov_arm(rng: np.random.Generator, n: int) -> dict:
    """Sequences of 3 tokens from a fixed chain over 8 tokens, with many rare ones: two arms drawn
    from it share one distribution."""
    first = np.array([0.4, 0.2, 0.1, 0.1, 0.08, 0.06, 0.04, 0.02])
    step = np.roll(np.eye(8) * 0.5 + 0.5 / 8, 1, axis=1)
    step /= step.sum(axis=1, keepdims=True)
    out = {}
    for p in range(2):
        rows = []
        tokens = rng.choice(8, size=n, p=first)
        seqs = [tokens]
        for _ in range(2):
            tokens = np.array([rng.choice(8, p=step[t]) for t in tokens])
            seqs.append(tokens)
        rows = [[str(seqs[i][j]) for i in range(3)] for j in range(n)]
        out[f"p{p}"] = rows
    return out


def test_the_false_alarm_rate_is_the_stated_one_over_repeated_seeds() -> None:
    """200 pairs of honest arms at alpha = 0.05: the number called "differs" lies within the
    binomial's 99.9 % range (a test that never or too often rejects fails)."""
    rng = np.random.default_rng(2026)
    trials, alpha = 200, 0.05
    rejected = 0
    for seed in range(trials):
        a, b = _markov_arm(rng, 150), _markov_arm(rng, 150)
        result = compare_samples(a, b, positions=3, alpha=alpha, permutations=199, seed=seed)
        rejected += result.p_value < alpha
    low, high = stats.binom.ppf([0.0005, 0.9995], trials, alpha)
    assert low <= rejected <= high, rejected


def test_a_verdict_reproduces_from_the_same_samples_and_seed(baselines: dict) -> None:
    drafted = toy_arm(3, "lossless", 5, 1.0, n=200)
    base = {k: v[:200] for k, v in baselines[1.0].items()}
    first = compare_samples(base, drafted, positions=POSITIONS, seed=11)
    assert compare_samples(base, drafted, positions=POSITIONS, seed=11) == first
