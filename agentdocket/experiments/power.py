"""What a comparison can see: the smallest drop its test can flag, the chance that it flags a
drop of a given size, and the cases and repeats that would give that chance.

Pass/fail scorers are tested by the sign test on the cases that changed (:mod:`.stats`).
With ``up`` and ``down`` the chances that a case's pass share goes up or down, the number of
changed cases is binomial and, given it, the number that improved; :func:`sign_power` sums
the exact chance that the test flags a drop (normal approximation beyond
:data:`EXACT_CASES` cases). With repeats, a case's chances of moving come from its chance of
passing on each side (:func:`direction_chances`), estimated from the runs and shrunk toward
the mean by a beta-binomial fit (:func:`shrunk`): a case that passed 3 of 3 runs is not taken
for one that always passes.

Score scorers are tested by the signed-rank test; the cases it needs for a shift whose
Walsh averages fall above zero with chance ``p'`` follow Noether's formula, ``n = (z_(1 -
t/2) + z_power)^2 / (3 (p' - 1/2)^2)`` changed cases.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from statistics import NormalDist

import numpy as np

from agentdocket.experiments import stats

POWER = 0.8  # the chance of detection "would detect" means
EXACT_CASES = 400  # beyond it the normal approximation is within a few cases in a hundred
MAX_CASES = 1_000_000
_NORMAL = NormalDist()


def smallest_drop(cases: int, repeats: int, threshold: float) -> tuple[int, float] | None:
    """The fewest cases that must all do worse (none better) for the sign test to flag a drop
    at ``threshold``, and the smallest pass-rate drop that is (each of them losing one run of
    ``repeats``); None when not even every case doing worse would."""
    m = stats.fewest_changes(threshold, cases)
    if m is None:
        return None
    return m, m / (cases * repeats)


@functools.lru_cache(maxsize=4096)
def _flag_at_most(m: int, threshold: float) -> int:
    """The most improved cases among ``m`` changed ones with which the sign test still flags
    the change as a drop (-1: none)."""
    tails = 2 * np.cumsum(stats.binomial_pmf(m, 0.5))[: (m + 1) // 2]
    return int(np.searchsorted(tails, threshold * (1 + 1e-12), side="right")) - 1


def sign_power(cases: int, up: float, down: float, threshold: float) -> float:
    """The chance that the sign test on ``cases`` cases flags a drop, each case improving with
    chance ``up`` and regressing with chance ``down``."""
    moved = up + down
    if cases <= 0 or moved <= 0 or down <= up:
        return 0.0
    if cases > EXACT_CASES:
        return _normal_power(cases, up, down, threshold)
    improve = up / moved
    m = np.arange(1, cases + 1)
    most = _most(cases, threshold)
    if most.max() < 0:
        return 0.0
    b = np.arange(int(most.max()) + 1)[None, :]
    inside = b <= most[:, None]
    rest = np.where(inside, m[:, None] - b, 0)
    grid = _log_choose_grid()
    logs = np.where(inside, grid[m[:, None], np.minimum(b, m[:, None])], -np.inf)
    # improve < 1/2 here (the cases lean worse): log(1 - improve) is finite
    logs = (logs + b * math.log(improve)) if improve > 0 else np.where(b > 0, -np.inf, logs)
    logs = logs + rest * math.log1p(-improve)
    flagged = np.exp(logs).sum(axis=1)
    changed = stats.binomial_pmf(cases, moved)[1:]
    return float(min(1.0, (changed * flagged).sum()))


def _most(cases: int, threshold: float) -> np.ndarray:
    return np.array([_flag_at_most(int(x), threshold) for x in range(1, cases + 1)])


@functools.cache
def _log_choose_grid() -> np.ndarray:
    """``log C(m, b)`` for m, b = 0 .. :data:`EXACT_CASES` (b <= m)."""
    lf = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, EXACT_CASES + 1)))))
    m, b = np.arange(EXACT_CASES + 1)[:, None], np.arange(EXACT_CASES + 1)[None, :]
    grid: np.ndarray = np.where(b <= m, lf[m] - lf[b] - lf[np.maximum(m - b, 0)], -np.inf)
    grid.flags.writeable = False
    return grid


def sign_cases(up: float, down: float, threshold: float) -> int | None:
    """About the fewest cases with which the sign test flags a drop with chance
    :data:`POWER`, each case improving with chance ``up`` and regressing with ``down``: the
    normal approximation's answer, refined on the exact power near it (up to
    :data:`EXACT_CASES`); None when the cases do not lean worse."""
    moved = up + down
    if moved <= 0 or down <= up:
        return None
    r = down / moved
    if 2 * r - 1 < 1e-9:  # as good as even: no number of cases would do
        return None
    z = _NORMAL.inv_cdf(1 - threshold / 2) + _NORMAL.inv_cdf(POWER) * 2 * math.sqrt(r * (1 - r))
    guess = (z / (2 * r - 1)) ** 2 / moved
    if guess > MAX_CASES:
        return None
    if guess > EXACT_CASES:
        return math.ceil(guess)
    return cases_for(lambda n: sign_power(n, up, down, threshold), start=max(1, int(guess / 2)))


def _normal_power(cases: int, up: float, down: float, threshold: float) -> float:
    moved = up + down
    if cases <= 0 or moved <= 0 or down <= up:
        return 0.0
    r = down / moved
    z = _NORMAL.inv_cdf(1 - threshold / 2)
    m = cases * moved
    return _NORMAL.cdf((math.sqrt(m) * (2 * r - 1) - z) / (2 * math.sqrt(r * (1 - r)) or 1e-12))


def cases_for(power_at: Callable[[int], float], *, start: int = 1) -> int | None:
    """The fewest cases ``n`` with ``power_at(n) >= POWER``, by doubling then bisection (the
    exact power is saw-toothed in ``n``: "about" that many); None beyond :data:`MAX_CASES`."""
    low, high = max(0, start - 1), max(1, start)
    while power_at(high) < POWER:
        low, high = high, high * 2
        if high > MAX_CASES:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        if power_at(mid) >= POWER:
            high = mid
        else:
            low = mid
    return high


def direction_chances(
    base: Sequence[float], cand: Sequence[float], repeats: int
) -> tuple[float, float]:
    """The chances that a case's pass share over ``repeats`` runs a side goes up and down,
    averaged over cases whose chances of passing are ``base[i]`` and ``cand[i]``."""
    up = down = 0.0
    for pb, pc in zip(base, cand, strict=True):
        b, c = stats.binomial_pmf(repeats, pb), stats.binomial_pmf(repeats, pc)
        below = np.concatenate(([0.0], np.cumsum(b)[:-1]))  # P(X_base < j)
        above = 1.0 - np.cumsum(b)  # P(X_base > j)
        up += float((c * below).sum())
        down += float((c * above).sum())
    n = max(1, len(base))
    return up / n, down / n


def shrunk(passed: Sequence[int], runs: Sequence[int]) -> list[float]:
    """Each case's chance of passing, from ``passed`` of ``runs``: the posterior mean under a
    beta distribution of the cases' chances fitted by moments (between-case variance = the
    variance of the shares less the binomial variance within a case)."""
    shares = [p / r for p, r in zip(passed, runs, strict=True) if r]
    if not shares:
        return []
    mean = sum(shares) / len(shares)
    if mean in (0.0, 1.0) or len(shares) < 2:
        return [mean] * len(passed)
    spread = sum((s - mean) ** 2 for s in shares) / (len(shares) - 1)
    within = mean * (1 - mean) * sum(1 / r for r in runs if r) / len(shares)
    between = spread - within
    if between <= 0:  # no sign of cases differing: each at the mean
        return [mean] * len(passed)
    weight = mean * (1 - mean) / between - 1
    if weight <= 0:  # as spread as chances can be: the shares themselves
        return [p / r if r else mean for p, r in zip(passed, runs, strict=True)]
    a, b = mean * weight, (1 - mean) * weight
    return [(p + a) / (r + a + b) for p, r in zip(passed, runs, strict=True)]


def signed_rank_cases(above: float, changed_share: float, threshold: float) -> int | None:
    """Noether's cases for the signed-rank test to flag a shift at ``threshold`` with chance
    :data:`POWER`: ``above`` the chance that a Walsh average is above zero, ``changed_share``
    the share of cases that change at all. None when ``above`` is one half (no shift)."""
    if abs(above - 0.5) < 1e-12 or changed_share <= 0:
        return None
    z = _NORMAL.inv_cdf(1 - threshold / 2) + _NORMAL.inv_cdf(POWER)
    changed = z**2 / (3 * (above - 0.5) ** 2)
    floor = stats.fewest_changes(threshold, 10_000) or 1
    return max(floor, math.ceil(changed / changed_share))
