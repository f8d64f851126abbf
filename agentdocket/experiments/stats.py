"""The statistics of a paired comparison, as pure functions of per-case values.

- :func:`sign_test`: the exact two-sided McNemar test on the discordant cases (a case that
  improved against one that regressed), the binomial test of ``b`` against ``b + c`` at 1/2.
- :func:`wilcoxon`: the Wilcoxon signed-rank test of paired scores, two-sided; zero
  differences are dropped, ties take average ranks; the exact null distribution (computed on
  doubled ranks, so that average ranks stay integers) up to :data:`EXACT_LIMIT` differences,
  beyond it the normal approximation with the tie correction and a continuity correction.
- :func:`bootstrap`: the percentile interval of the mean paired difference, cases resampled.
- :func:`tarone_holm`: Holm's step-down refined for discrete tests by Tarone: scorers whose
  smallest attainable p-value cannot reach the threshold (too few changed cases) leave the
  family, so that they cost the others nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

EXACT_LIMIT = 300  # differences up to which the Wilcoxon distribution is computed exactly
EXACT_BINOMIAL_LIMIT = 2000  # discordant pairs up to which the sign test sums exact integers


def sign_test(improved: int, regressed: int) -> float:
    """Exact two-sided p-value of ``improved`` against ``regressed`` under no difference."""
    n = improved + regressed
    if n == 0:
        return 1.0
    k = min(improved, regressed)
    if n <= EXACT_BINOMIAL_LIMIT:
        tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
        return float(min(Fraction(1), 2 * tail))
    # log-space for large n: log C(n, i) - n log 2, summed with the largest term factored out
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
        for i in range(k + 1)
    ]
    top = max(logs)
    tail_f = math.exp(top) * sum(math.exp(v - top) for v in logs)
    return min(1.0, 2 * tail_f)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of ``values``."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def wilcoxon(differences: Sequence[float]) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test on paired ``differences``."""
    d = np.asarray([x for x in differences if x != 0], dtype=float)
    n = len(d)
    if n == 0:
        return 1.0
    ranks = _ranks(np.abs(d))
    w_plus = float(ranks[d > 0].sum())
    if n <= EXACT_LIMIT:
        doubled = np.rint(ranks * 2).astype(int)  # average ranks are halves: doubled, integers
        total = int(doubled.sum())
        dist = np.zeros(total + 1)
        dist[0] = 1.0
        for r in doubled:
            shifted = np.zeros_like(dist)
            shifted[r:] = dist[: total + 1 - r]
            dist = (dist + shifted) / 2
        observed = round(w_plus * 2)
        mirrored = total - observed
        low, high = min(observed, mirrored), max(observed, mirrored)
        p = float(dist[: low + 1].sum() + dist[high:].sum()) if low != high else 1.0
        return min(1.0, p)
    mean = n * (n + 1) / 4
    _, counts = np.unique(np.abs(d), return_counts=True)
    variance = n * (n + 1) * (2 * n + 1) / 24 - float((counts**3 - counts).sum()) / 48
    if variance <= 0:
        return 1.0
    z = (abs(w_plus - mean) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def bootstrap(
    differences: Sequence[float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    chunk: int = 20_000_000,
) -> tuple[float, float, float]:
    """The mean of ``differences`` and its percentile bootstrap interval at ``level``
    (``resamples`` resamples of the cases with replacement, ``seed`` fixed: the same data
    give the same interval). Memory stays under ``chunk`` indices at a time."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    if n == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    per = max(1, chunk // n)
    for start in range(0, resamples, per):
        k = min(per, resamples - start)
        idx = rng.integers(0, n, size=(k, n))
        means[start : start + k] = d[idx].mean(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(d.mean()), float(low), float(high)


def sign_test_floor(changed: int) -> float:
    """The smallest p-value :func:`sign_test` can give with ``changed`` discordant cases
    (all of them one way)."""
    return sign_test(changed, 0)


def wilcoxon_floor(differences: Sequence[float]) -> float:
    """The smallest p-value :func:`wilcoxon` can give for differences of these sizes (all of
    them one way)."""
    return wilcoxon([abs(x) for x in differences])


def tarone_k(floors: Sequence[float], alpha: float) -> int:
    """Tarone's K: the smallest K >= 1 such that at most K of the hypotheses could reach a
    p-value of ``alpha / K`` at all (``floors``: each one's smallest attainable p-value)."""
    k = 1
    while sum(1 for f in floors if f <= alpha / k) > k:
        k += 1
    return k


def tarone_holm(
    p_values: Sequence[float], floors: Sequence[float], alpha: float
) -> tuple[list[bool], list[float | None]]:
    """Holm's step-down with Tarone's refinement for discrete tests (Hommel and Krummenauer):
    at each step, of the hypotheses not yet rejected, only those whose smallest attainable
    p-value (``floors``) could reach ``alpha / K`` count, K by :func:`tarone_k`; the smallest
    remaining p-value is rejected when it is at most ``alpha / K``. A hypothesis that cannot
    reach any threshold is never counted, so a scorer with too few changed cases costs the
    others nothing. Returns whether each is rejected, and its adjusted p-value (``K`` times
    its p, made monotone along the steps; None for one not testable when its turn came)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], floors[i]))
    rejected = [False] * m
    adjusted: list[float | None] = [None] * m
    running, stopped = 0.0, False
    for step, i in enumerate(order):
        k = tarone_k([floors[j] for j in order[step:]], alpha)
        testable = floors[i] <= alpha / k
        if testable:
            running = max(running, min(1.0, k * p_values[i]))
            adjusted[i] = running
        if not stopped and testable and p_values[i] <= alpha / k:
            rejected[i] = True
        else:  # step-down: the first hypothesis kept stops the rejections
            stopped = True
    return rejected, adjusted
