"""The shift of paired scores, by the signed-rank test: its p-value, its estimate and its
interval from one construction, so that they cannot disagree.

The cases that did not change (a zero difference) say nothing about the direction of a shift
and are set aside first, as Wilcoxon did; on the ``n`` differences left, everything is a
function of the Walsh averages ``(d_i + d_j) / 2``, ``i <= j`` (``N = n (n + 1) / 2`` of them):

- the **estimate** is their median, the Hodges-Lehmann estimate of the shift;
- the **test** of "no shift" counts the Walsh averages above zero, ``T``: with no ties it is
  the signed-rank statistic, and its null distribution (every sign of the ``n`` differences
  equally likely) is computed exactly up to :data:`EXACT_LIMIT` differences, beyond that by
  the normal approximation with a continuity correction. A Walsh average equal to zero (two
  changes of the same size and opposite signs) is counted on whichever side puts ``T``
  nearer its centre: the p-value is then never smaller than for the same data jittered by
  an infinitesimal amount, whose null distribution is exactly the one used, so the test
  keeps its level with ties;
- the **interval** at level ``1 - t`` is every shift the same test does not reject at
  ``t``: the closed interval from the ``(c + 1)``-th to the ``(N - c)``-th smallest Walsh
  average, ``c`` the largest count with ``2 P(T <= c) <= t``.

So ``p <= t`` exactly when the interval leaves out zero, and the estimate lies inside the
interval: the direction of a significant shift is the sign of its estimate. When no outcome
could reach ``t`` (five or fewer changed cases at 0.05) the interval is unbounded.

Walsh averages are never listed: they are counted against a value by a binary search per
difference on the sorted differences (``O(n log n)``), and the k-th smallest is found by a
bisection over the ordered bit patterns of doubles, comparing ``fl(d_i + d_j)`` with ``2 x``
the same way every time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from agentdocket.experiments.stats import Tested

EXACT_LIMIT = 300  # differences up to which the null distribution of T is computed exactly


@functools.lru_cache(maxsize=64)
def _lower_tails(n: int) -> np.ndarray:
    """``P(T <= t)`` for t = 0 .. N under no shift, n differences with no ties (exact)."""
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):  # each rank is counted in T or not, each with chance 1/2
        shifted = np.zeros_like(counts)
        shifted[rank:] = counts[: total + 1 - rank]
        counts = (counts + shifted) / 2
    tails = np.cumsum(counts)
    tails.flags.writeable = False
    return tails


def lower_tail(n: int, t: int) -> float:
    """``P(T <= t)`` under no shift with ``n`` differences."""
    if t < 0:
        return 0.0
    total = n * (n + 1) // 2
    if t >= total:
        return 1.0
    if n <= EXACT_LIMIT:
        return float(_lower_tails(n)[t])
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = (t + 0.5 - total / 2) / sd
    return 0.5 * math.erfc(-z / math.sqrt(2))


def two_sided(n: int, distance: int) -> float:
    """The two-sided p-value of a count ``distance`` away from the nearer end (``min(T,
    N - T)``)."""
    return min(1.0, 2 * lower_tail(n, distance))


def critical(n: int, threshold: float) -> int:
    """The largest ``c`` with ``2 P(T <= c) <= threshold``; -1 when even ``T = 0`` is not."""
    if two_sided(n, 0) > threshold:
        return -1
    low, high = 0, n * (n + 1) // 4 + 1  # two_sided(n, low) <= threshold < two_sided(n, high)
    while high - low > 1:
        mid = (low + high) // 2
        if two_sided(n, mid) <= threshold:
            low = mid
        else:
            high = mid
    return low


def floor(changed: int) -> float:
    """The smallest p-value ``changed`` differences can give (all of one sign)."""
    return 1.0 if changed == 0 else two_sided(changed, 0)


class _Walsh:
    """The Walsh averages of sorted differences, counted and ranked without listing them all."""

    ENUMERATE = 1 << 18  # sums listed at once when the k-th is narrowed down to this many

    def __init__(self, d: np.ndarray) -> None:
        self.d = np.sort(d)
        self.n = len(self.d)
        self.total = self.n * (self.n + 1) // 2
        self.rows = np.arange(self.n)

    def ends(self, x: float, strict: bool) -> np.ndarray:
        """Per i, the first j >= i with ``fl(d_i + d_j) > x`` (``>= x`` when strict): the j
        satisfying it are a prefix of the sorted tail, found by a vectorised binary search."""
        d, n, i = self.d, self.n, self.rows
        low, high = i.copy(), np.full(n, n)  # answer in [low, high]
        while True:
            active = low < high
            if not active.any():
                return low
            mid = (low + high) // 2
            s = d + d[np.minimum(mid, n - 1)]
            ok = ((s < x) if strict else (s <= x)) & active
            low = np.where(ok, mid + 1, low)
            high = np.where(active & ~ok, mid, high)

    def count(self, x: float, strict: bool) -> int:
        """How many ``fl(d_i + d_j) <= x`` (``< x`` when strict), i <= j."""
        return int((self.ends(x, strict) - self.rows).sum())

    def kth(self, k: int) -> float:
        """The k-th smallest Walsh average (1-based), exactly: bisection over the ordered bit
        patterns of doubles keeps ``count(low) < k <= count(high)`` until few enough sums lie
        in ``(low, high]`` to list them (or one double is left), then the k-th is picked."""
        low, high = _ordered(2 * float(self.d[0])) - 1, _ordered(2 * float(self.d[-1]))
        low_ends, high_ends = self.rows.copy(), np.full(self.n, self.n)
        while high - low > 1:
            between = high_ends - low_ends
            if int(between.sum()) <= self.ENUMERATE:
                return self._pick(k - int((low_ends - self.rows).sum()), low_ends, between)
            mid = (low + high) // 2
            ends = self.ends(_double(mid), strict=False)
            if int((ends - self.rows).sum()) >= k:
                high, high_ends = mid, ends
            else:
                low, low_ends = mid, ends
        return _double(high) / 2

    def _pick(self, k: int, starts: np.ndarray, counts: np.ndarray) -> float:
        """The k-th smallest of the sums ``d_i + d_j``, j in ``[starts[i], starts[i] +
        counts[i])``, halved."""
        rows = np.repeat(self.rows, counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        cols = np.repeat(starts, counts) + (np.arange(len(rows)) - first)
        sums = self.d[rows] + self.d[cols]
        return float(np.partition(sums, k - 1)[k - 1]) / 2

    def median(self) -> float:
        if self.total % 2:
            return self.kth((self.total + 1) // 2)
        return (self.kth(self.total // 2) + self.kth(self.total // 2 + 1)) / 2


def _ordered(x: float) -> int:
    """A double as an integer of the same order (finite doubles only)."""
    bits = int(np.array(x, dtype=np.float64).view(np.int64))
    return bits if bits >= 0 else -(bits & 0x7FFFFFFFFFFFFFFF)


def _double(i: int) -> float:
    bits = i if i >= 0 else (-i) | -0x8000000000000000
    return float(np.array(bits, dtype=np.int64).view(np.float64))


def _changed(differences: Sequence[float]) -> np.ndarray:
    d = np.asarray([x for x in differences if x != 0], dtype=float)
    if not np.all(np.isfinite(d)):
        raise ValueError("differences must be finite numbers")
    return d


def p_value(differences: Sequence[float]) -> tuple[float, float]:
    """The test's p-value and its floor (the smallest p-value as many changes can give)."""
    d = _changed(differences)
    return (_p(_Walsh(d)), floor(len(d))) if len(d) else (1.0, 1.0)


def _p(walsh: _Walsh) -> float:
    n, total = walsh.n, walsh.total
    above = total - walsh.count(0.0, strict=False)  # Walsh averages > 0
    at_least = total - walsh.count(0.0, strict=True)  # >= 0
    if at_least * 2 < total:  # below the centre: the count nearer it is at_least
        p = two_sided(n, at_least)
    elif above * 2 > total:
        p = two_sided(n, total - above)
    else:  # the centre lies between them
        p = 1.0
    return p


def shift(differences: Sequence[float], threshold: float) -> Tested:
    """The signed-rank test of no shift at ``threshold``, its Hodges-Lehmann estimate and the
    interval at level ``1 - threshold`` (see the module's docstring)."""
    d = _changed(differences)
    n = len(d)
    if n == 0:
        return Tested("signed-rank", 0, 0.0, None, None, 1.0, 1.0, threshold)
    walsh = _Walsh(d)
    total = walsh.total
    p = _p(walsh)
    c = critical(n, threshold)
    low = high = None
    if c >= 0:
        low, high = walsh.kth(c + 1), walsh.kth(total - c)
    return Tested("signed-rank", n, walsh.median(), low, high, p, floor(n), threshold)
