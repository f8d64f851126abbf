"""The statistics of a paired comparison of pass/fail outcomes, and the family's adjustment, as
pure functions.

- :func:`sign_test`: the exact two-sided sign test on the cases that changed (one that
  improved against one that regressed): the binomial test of ``b`` against ``b + c`` at 1/2,
  McNemar's exact test when each case ran once a side.
- :func:`proportions`: its estimate and interval, from the same test: the difference in pass
  rates ``(b - c) / n`` (with repeats, the net share of cases that improved), and the
  interval ``(2 pi - 1) m / n`` over the ``pi`` (the chance that a changed case improved)
  that the exact binomial test does not reject at the threshold, ``m = b + c``: the
  Clopper-Pearson interval, which is exactly the inversion of the test. So ``p <= t`` exactly
  when the interval leaves out zero (:mod:`.signed_rank` does the same for scores).
- :func:`tarone_holm`: Holm's step-down refined for discrete tests by Tarone: scorers whose
  smallest attainable p-value cannot reach the threshold (too few changed cases) leave the
  family, so that they cost the others nothing; it says at which threshold each was decided,
  the level its interval is given at.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

EXACT_BINOMIAL_LIMIT = 2000  # discordant pairs up to which the sign test sums exact integers


@dataclass(frozen=True)
class Tested:
    """A test's p-value with the estimate and interval that invert it at ``threshold``."""

    test: str  # "sign" or "signed-rank"
    changed: int  # the cases that changed: the test's n
    estimate: float
    low: float | None  # None: unbounded (no outcome with this many changes is significant)
    high: float | None
    p_value: float
    floor: float
    threshold: float

    @property
    def significant(self) -> bool:
        return self.p_value <= self.threshold


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


def sign_test_floor(changed: int) -> float:
    """The smallest p-value :func:`sign_test` can give with ``changed`` discordant cases
    (all of them one way)."""
    return sign_test(changed, 0)


def fewest_changes(threshold: float, limit: int) -> int | None:
    """The fewest cases that must all change one way for the sign test to reach
    ``threshold`` (None: more than ``limit``)."""
    for m in range(1, limit + 1):
        if sign_test_floor(m) <= threshold:
            return m
    return None


def _binomial_p(successes: int, trials: int, chance: float) -> float:
    """The two-sided p-value of ``successes`` of ``trials`` at ``chance``, doubling the
    smaller tail (the test whose inversion is the Clopper-Pearson interval)."""
    if chance <= 0.0:
        return 1.0 if successes == 0 else 0.0
    if chance >= 1.0:
        return 1.0 if successes == trials else 0.0
    pmf = binomial_pmf(trials, chance)
    lower, upper = float(pmf[: successes + 1].sum()), float(pmf[successes:].sum())
    return min(1.0, 2 * min(lower, upper))


@functools.lru_cache(maxsize=256)
def _log_choose(n: int) -> np.ndarray:
    """``log C(n, i)`` for i = 0 .. n."""
    log_factorials = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1)))))
    out: np.ndarray = log_factorials[n] - log_factorials - log_factorials[::-1]
    out.flags.writeable = False
    return out


def binomial_pmf(n: int, chance: float) -> np.ndarray:
    """The binomial distribution of ``n`` trials at ``chance``, i = 0 .. n."""
    if chance <= 0.0 or chance >= 1.0:
        out = np.zeros(n + 1)
        out[0 if chance <= 0.0 else n] = 1.0
        return out
    i = np.arange(n + 1)
    pmf: np.ndarray = np.exp(_log_choose(n) + i * math.log(chance) + (n - i) * math.log1p(-chance))
    return pmf


def _edge(accepted: float, toward: float, accepts: Callable[[float], bool]) -> float:
    """The farthest point from ``accepted`` toward ``toward`` that ``accepts`` (a convex set
    holding ``accepted``), by bisection to the precision of doubles."""
    if accepts(toward):
        return toward
    inside, outside = accepted, toward
    while True:
        mid = (inside + outside) / 2
        if mid in (inside, outside):
            return inside
        if accepts(mid):
            inside = mid
        else:
            outside = mid


def proportions(improved: int, regressed: int, cases: int, threshold: float) -> Tested:
    """The sign test of ``improved`` against ``regressed`` of ``cases`` paired cases, with the
    estimate and the interval at level ``1 - threshold`` that invert it."""
    m = improved + regressed
    p = sign_test(improved, regressed)
    floor = sign_test_floor(m)
    estimate = (improved - regressed) / cases if cases else 0.0
    if floor > threshold:
        return Tested("sign", m, estimate, None, None, p, floor, threshold)
    significant = p <= threshold

    def accepts(chance: float) -> bool:
        if chance == 0.5:  # no difference: decided by the test itself, exactly
            return not significant
        return _binomial_p(improved, m, chance) > threshold

    observed = improved / m
    # start from a point the test accepts: the observed share always is (both tails >= 1/2)
    start_low = 0.5 if not significant and observed > 0.5 else observed
    start_high = 0.5 if not significant and observed < 0.5 else observed
    low, high = _edge(start_low, 0.0, accepts), _edge(start_high, 1.0, accepts)
    scale = m / cases
    return Tested(
        "sign", m, estimate, (2 * low - 1) * scale, (2 * high - 1) * scale, p, floor, threshold
    )


def tarone_k(floors: Sequence[float], alpha: float) -> int:
    """Tarone's K: the smallest K >= 1 such that at most K of the hypotheses could reach a
    p-value of ``alpha / K`` at all (``floors``: each one's smallest attainable p-value)."""
    k = 1
    while sum(1 for f in floors if f <= alpha / k) > k:
        k += 1
    return k


@dataclass(frozen=True)
class Adjusted:
    """The family's decisions, hypothesis by hypothesis."""

    rejected: list[bool]
    adjusted: list[float | None]  # K times p made monotone; None: not testable at its turn
    thresholds: list[float]  # the threshold each was decided at (its interval's 1 - level)
    sizes: list[int]  # K at its turn


def tarone_holm(p_values: Sequence[float], floors: Sequence[float], alpha: float) -> Adjusted:
    """Holm's step-down with Tarone's refinement for discrete tests (Hommel and Krummenauer):
    at each step, of the hypotheses not yet rejected, only those whose smallest attainable
    p-value (``floors``) could reach ``alpha / K`` count, K by :func:`tarone_k`; the smallest
    remaining p-value is rejected when it is at most ``alpha / K``. A hypothesis that cannot
    reach any threshold is never counted, so a scorer with too few changed cases costs the
    others nothing.

    Each hypothesis is decided at a threshold: ``alpha / K`` of its step while rejections go
    on, then the threshold of the step that stopped them (every p-value after it is above
    that threshold, the order being by p-value). An interval at one minus that level leaves
    out zero exactly when the hypothesis is rejected."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: (p_values[i], floors[i]))
    rejected = [False] * m
    adjusted: list[float | None] = [None] * m
    thresholds = [alpha] * m
    sizes = [1] * m
    running, stop = 0.0, None
    for step, i in enumerate(order):
        k = tarone_k([floors[j] for j in order[step:]], alpha)
        sizes[i] = k
        testable = floors[i] <= alpha / k
        if testable:
            running = max(running, min(1.0, k * p_values[i]))
            adjusted[i] = running
        if stop is None and testable and p_values[i] <= alpha / k:
            rejected[i] = True
            thresholds[i] = alpha / k
        else:  # step-down: the first hypothesis kept stops the rejections
            stop = alpha / k if stop is None else stop
            thresholds[i] = stop
    return Adjusted(rejected, adjusted, thresholds, sizes)
