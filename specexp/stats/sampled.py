"""Are two samples of generated tokens drawn from one distribution? (docs/answers.md section 1)

Each prompt is a stratum: N completions sampled without the drafter (the baseline) and M with
it, each cut to its first `positions` tokens (a shorter one is padded with END). What is
compared is each position's next-token distribution given the tokens before it, which is what
rejection sampling must keep exactly: for each position and each context (the tokens before it)
that MIN_CONTEXT completions of both arms share, the arms' next tokens form a 2 x K table of the
MAX_CATEGORIES most frequent tokens seen at least MIN_POOLED times, and RARE for the rest (chosen
without the arm labels). Position 1's context is the prompt alone, so its table is the first
token's frequencies; deeper tables compare the sequences of the first tokens one step at a time.
The statistic is Pearson's X^2 of each table, summed over tables and prompts.

The p-value is a permutation test's: the arm labels are shuffled within each prompt, which under
the null hypothesis (both arms draw from one distribution per prompt) leaves the statistic's
distribution unchanged, so the false-alarm rate is the stated `alpha` for any counts, small and
rare ones included (p = (1 + #{T_perm >= T}) / (1 + R): exact for a Monte Carlo test).

What the test could have detected is stated beside it: the smallest shift of probability onto
one token (the most common one of each table, taken from the others in proportion: a total
variation distance of that size) in every table that the test catches POWER of the time at this
N and `alpha`, from the noncentral chi-square approximation of the statistic. The verdict:

- "differs": p < alpha;
- "not enough samples": not so, but the detectable shift is over `max_shift` (or nothing varied);
- "same distribution": neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

END = "<end>"
"""Where a completion stopped before `positions` tokens."""
RARE = "<rare>"
MIN_POOLED = 10
"""Tokens seen fewer times than this in a table (both arms together) are pooled into RARE."""
MIN_CONTEXT = 50
"""Completions (both arms) that must share the tokens before a position for their next tokens to
be compared there."""
MAX_CATEGORIES = 3
"""Tokens kept per table, the most frequent; the rest are pooled into RARE. Few categories keep
the degrees of freedom low, where the power is."""
ALPHA = 0.01
"""The false-alarm rate: an honest engine is called "differs" this often."""
MAX_SHIFT = 0.05
"""The largest detectable shift (probability onto one token) that still earns "same
distribution": at an N too small to see a 5-point skew, the verdict is "not enough samples"."""
POWER = 0.8
PERMUTATIONS = 1999

SAME, DIFFERS, NOT_ENOUGH = "same distribution", "differs", "not enough samples"
Tokens = Sequence[str]


@dataclass(frozen=True)
class SampledComparison:
    """The test of one drafter run's samples against its baseline's."""

    statistic: float
    p_value: float
    df: int
    """Degrees of freedom of the tables (categories - 1, summed)."""
    tables: int
    alpha: float
    detectable_shift: float | None
    """Probability moved onto one token in every table that this N detects POWER of the time
    (None: nothing varied, so nothing could be detected)."""
    largest_tv: float
    """The largest total-variation distance between the arms' frequencies over the tables."""
    prompts: int
    samples: tuple[int, int]
    """Completions compared, (baseline, drafter)."""
    positions: int
    permutations: int
    seed: int
    verdict: str


@dataclass(frozen=True)
class _Table:
    onehot: np.ndarray
    """Completions x categories: 1 where a completion of this context has that next token (rows of
    completions outside the context are 0); baseline completions first."""
    totals: np.ndarray
    """Completions per category, both arms."""


def padded(tokens: Tokens, positions: int) -> list[str]:
    return [*list(tokens)[:positions], *[END] * max(positions - len(tokens), 0)]


def _tables(rows: list[list[str]], positions: int) -> list[_Table]:
    """One table per position and context that MIN_CONTEXT completions share."""
    tables = []
    for i in range(positions):
        contexts: dict[tuple[str, ...], list[int]] = {}
        for j, row in enumerate(rows):
            contexts.setdefault(tuple(row[:i]), []).append(j)
        for members in contexts.values():
            if len(members) < MIN_CONTEXT:
                continue
            column = [rows[j][i] for j in members]
            values, counts = np.unique(np.array(column, dtype=object), return_counts=True)
            ranked = sorted(zip(counts, values, strict=True), key=lambda cv: (-cv[0], str(cv[1])))
            common = [v for c, v in ranked[:MAX_CATEGORIES] if c >= MIN_POOLED]
            names = sorted(common) + ([RARE] if len(common) < len(values) else [])
            if len(names) < 2:
                continue
            index = {n: k for k, n in enumerate(names)}
            onehot = np.zeros((len(rows), len(names)))
            for j, v in zip(members, column, strict=True):
                onehot[j, index.get(v, len(names) - 1)] = 1.0
            tables.append(_Table(onehot, onehot.sum(axis=0)))
    return tables


def _x2(first: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Pearson's X^2 of 2 x K tables from the first arm's counts (last axis: categories); the
    arms' shares of a context may differ from one permutation to the next."""
    m = totals.sum()
    m_a = first.sum(axis=-1, keepdims=True)
    m_b = m - m_a
    scale = np.where((m_a > 0) & (m_b > 0), m * m / np.maximum(m_a * m_b, 1e-12), 0.0)
    return (scale * ((first - totals * m_a / m) ** 2 / totals).sum(axis=-1, keepdims=True))[..., 0]


def _noncentrality(shift: float, table: _Table, share: float) -> float:
    """lambda of X^2 when the drafter arm has `shift` more probability on the table's most common
    category than the pooled frequencies, taken from the others in proportion; `share`: the
    baseline's share of the completions."""
    m = float(table.totals.sum())
    p = table.totals / m
    top = int(np.argmax(p))
    moved = min(shift, 1.0 - p[top])
    q = p * (1 - moved / (1.0 - p[top]))
    q[top] = p[top] + moved
    mixed = share * p + (1 - share) * q
    return float(m * share * (1 - share) * ((p - q) ** 2 / mixed).sum())


def detectable_shift(
    strata: Sequence[tuple[list[_Table], float]], alpha: float, power: float = POWER
) -> float | None:
    """The smallest shift caught with `power` at `alpha` (bisection on the noncentral chi-square);
    each stratum's tables with the baseline's share of its completions."""
    df = sum(len(t.totals) - 1 for tables, _ in strata for t in tables)
    if df == 0:
        return None
    from scipy import stats  # 1-2 s to import: only where a test is computed

    critical = stats.chi2.isf(alpha, df)

    def caught(shift: float) -> float:
        lam = sum(_noncentrality(shift, t, share) for tables, share in strata for t in tables)
        return float(stats.ncx2.sf(critical, df, lam))

    low, high = 0.0, 1.0
    if caught(high) < power:
        return 1.0
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (mid, high) if caught(mid) < power else (low, mid)
    return high


def compare_samples(
    baseline: Mapping[str, Sequence[Tokens]],
    drafter: Mapping[str, Sequence[Tokens]],
    positions: int,
    alpha: float = ALPHA,
    max_shift: float = MAX_SHIFT,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> SampledComparison:
    """Test the drafter's samples against the baseline's, prompt by prompt (keys both have)."""
    rng = np.random.default_rng(seed)
    observed, permuted = 0.0, np.zeros(permutations)
    strata: list[tuple[list[_Table], float]] = []
    largest_tv, sizes = 0.0, [0, 0]
    for key in sorted(set(baseline) & set(drafter)):
        n_a, n_b = len(baseline[key]), len(drafter[key])
        if not n_a or not n_b:
            continue
        n = n_a + n_b
        sizes[0], sizes[1] = sizes[0] + n_a, sizes[1] + n_b
        rows = [padded(t, positions) for t in (*baseline[key], *drafter[key])]
        tables = _tables(rows, positions)
        strata.append((tables, n_a / n))
        labels = np.zeros(n, dtype=bool)
        labels[:n_a] = True
        shuffled = rng.permuted(np.tile(labels, (permutations, 1)), axis=1).astype(float)
        for t in tables:
            first, second = t.onehot[:n_a].sum(axis=0), t.onehot[n_a:].sum(axis=0)
            observed += float(_x2(first, t.totals))
            permuted += _x2(shuffled @ t.onehot, t.totals)
            if first.sum() and second.sum():
                tv = 0.5 * np.abs(first / first.sum() - second / second.sum()).sum()
                largest_tv = max(largest_tv, float(tv))
    df = sum(len(t.totals) - 1 for tables, _ in strata for t in tables)
    p_value = float((1 + np.sum(permuted >= observed - 1e-9)) / (1 + permutations)) if df else 1.0
    shift = detectable_shift(strata, alpha)
    if p_value < alpha:
        verdict = DIFFERS
    elif shift is None or shift > max_shift:
        verdict = NOT_ENOUGH
    else:
        verdict = SAME
    return SampledComparison(
        statistic=observed,
        p_value=p_value,
        df=df,
        tables=sum(len(tables) for tables, _ in strata),
        alpha=alpha,
        detectable_shift=shift,
        largest_tv=largest_tv,
        prompts=len(strata),
        samples=(sizes[0], sizes[1]),
        positions=positions,
        permutations=permutations,
        seed=seed,
        verdict=verdict,
    )
