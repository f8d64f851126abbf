"""The bootstrap over items that every agreement statistic's interval is drawn from (see
:mod:`agentdocket.people.agreement`): a statistic of the items' summed features, its resamples
as item counts times those features, and the percentile or BCa interval read from them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]
CHUNK = 4_000_000  # item weights of the resamples held at once (resamples times items)


@dataclass(frozen=True)
class Estimate:
    """A statistic and its bootstrap interval at ``level`` (``method``: bca or percentile).
    ``value`` is None when the statistic is undefined; ``low`` and ``high`` are None then, and
    when no resample was drawn or defined. ``n_items``: the items (pairs, units) it was computed
    on; ``samples``: the resamples it was defined on, those the interval is read from."""

    value: float | None
    low: float | None
    high: float | None
    n_items: int
    level: float = 0.95
    samples: int = 0
    method: str = "bca"


@dataclass(frozen=True)
class Resampling:
    """How an interval is drawn: the caller's ``samples``, ``seed``, ``level`` and ``method``."""

    samples: int
    seed: int
    level: float
    method: str


def bca(value: float, drawn: Array, jackknife: Array, tail: float) -> list[float]:
    """The BCa interval's two quantile levels (Efron 1987): the bias correction from the share
    of resamples below the estimate, the acceleration from the jackknife's skewness."""
    normal = NormalDist()
    tolerance = 1e-12 * max(1.0, abs(value))
    below = np.count_nonzero(drawn < value - tolerance)
    ties = np.count_nonzero(np.abs(drawn - value) <= tolerance)
    share = min(max((below + ties / 2) / drawn.size, 0.5 / drawn.size), 1 - 0.5 / drawn.size)
    z0 = normal.inv_cdf(share)
    jackknife = jackknife[~np.isnan(jackknife)]
    acceleration = 0.0
    if jackknife.size >= 2:
        spread = jackknife.mean() - jackknife
        scale = float((spread**2).sum()) ** 1.5
        acceleration = float((spread**3).sum()) / (6 * scale) if scale > 0 else 0.0
    levels = []
    for q in (tail, 1 - tail):
        z = z0 + normal.inv_cdf(q)
        denominator = 1 - acceleration * z
        levels.append(normal.cdf(z0 + z / denominator) if denominator > 0 else q)
    return levels


def estimate(
    features: Array,
    statistic: Callable[[Array], Array],
    options: Resampling,
) -> Estimate:
    """The statistic of the items' summed ``features`` (one row per item), and its bootstrap
    interval: each resample's sums are its item counts times ``features``, and leaving an item
    out (the jackknife, for BCa) subtracts its row."""
    samples, level, method = options.samples, options.level, options.method
    n = features.shape[0]
    total = features.sum(axis=0)
    value = float(statistic(total[None, :])[0]) if n else math.nan
    if math.isnan(value):
        return Estimate(None, None, None, n, level, 0, method)
    if samples == 0:
        return Estimate(value, None, None, n, level, 0, method)
    rng = np.random.default_rng(options.seed)
    drawn = np.empty(samples)
    per = max(1, CHUNK // n)
    for start in range(0, samples, per):
        k = min(per, samples - start)
        picks = rng.integers(0, n, size=(k, n)) + (np.arange(k) * n)[:, None]
        weights = np.bincount(picks.ravel(), minlength=k * n).reshape(k, n).astype(float)
        # einsum's own loop, not BLAS: on products this small, BLAS threads spin for nothing
        drawn[start : start + k] = statistic(np.einsum("bn,nd->bd", weights, features))
    drawn = drawn[~np.isnan(drawn)]
    if not drawn.size:
        return Estimate(value, None, None, n, level, 0, method)
    tail = (1 - level) / 2
    levels = [tail, 1 - tail]
    if method == "bca":
        levels = bca(value, drawn, statistic(total[None, :] - features), tail)
    low, high = np.quantile(drawn, levels)
    return Estimate(value, float(low), float(high), n, level, int(drawn.size), method)


def divide(numerator: Array, denominator: Array) -> Array:
    """numerator / denominator, NaN where the denominator is not positive."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, numerator / safe, math.nan)
