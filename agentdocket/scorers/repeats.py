"""Repeated trials of the same cases: pass@1 with an interval clustered by case, pass@k and
pass^k, the cases whose verdict varies across repeats, and how the variance splits between
cases and within a case. Pure functions of per-case tallies.

- **pass@1** is the mean over cases of each case's share of passing runs (a run without an
  answer does not pass). Cases are the unit ("Adding Error Bars to Evals", Miller 2024): its
  standard error is that of the per-case shares, and its interval is Wilson's score interval
  at the effective number of runs that standard error implies (the runs divided by the design
  effect, never more than the runs), with the t quantile on ``cases - 1`` degrees of freedom.
  Simulated over case difficulties of mean 0.3 to 0.85 (beta distributions of concentration
  2 and 10), 10 to 100 cases and 1 to 5 repeats, it covers 93.3-99.5% of the time at 95%
  (96% on average; ``tests/unit/test_repeats.py``); at a mean of 0.95 it falls to 91.4% (20
  cases, most always passing). A t interval on the case means covers 40-90% near a pass rate
  of 1.
- **pass@k** is the chance that at least one of k runs of a case passes, and **pass^k** that
  all k do (tau-bench's reliability), each estimated without bias per case from its ``c``
  passes in ``n`` runs: ``1 - C(n - c, k) / C(n, k)`` and ``C(c, k) / C(n, k)`` (Chen et al.
  2021; Yao et al. 2024), averaged over cases; for k up to the fewest runs any case has.
- **flaky cases** passed in some runs and not in others.
- **variance** of a run's outcome splits into between cases (how much cases differ) and
  within a case (how much repeats of one case differ), by the one-way analysis of variance
  of runs grouped by case; the intraclass correlation is the share between cases. With most
  of it within cases, repeats narrow an interval; with most between, only more cases do.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean
from typing import Any

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Tally:
    """One case's runs and how many passed."""

    runs: int
    passed: int


def _t_within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom (Abramowitz and Stegun
    26.7.3-4: finite sums for whole degrees of freedom)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:
        term = total = 1.0
        for i in range(1, (df - 1) // 2):
            term *= c2 * (2 * i) / (2 * i + 1)
            total += term
        extra = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + extra)
    term = total = 1.0
    for i in range(1, df // 2):
        term *= c2 * (2 * i - 1) / (2 * i)
        total += term
    return math.sin(theta) * total


@functools.lru_cache(maxsize=4096)
def t_quantile(q: float, df: int) -> float:
    """Student's t quantile at ``q`` (above one half) for whole ``df``, by bisection on the
    exact distribution."""
    if df <= 0:
        return math.inf
    if df > 1000:
        return _NORMAL.inv_cdf(q)
    want = 2 * q - 1  # P(|T| <= t)
    low, high = 0.0, 1.0
    while _t_within(high, df) < want:
        high *= 2
    for _ in range(100):
        mid = (low + high) / 2
        if _t_within(mid, df) < want:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def clustered_interval(
    shares: Sequence[float], runs: int, level: float = 0.95
) -> tuple[float, float, float] | None:
    """The mean of per-case ``shares`` (of ``runs`` runs in all) and its case-clustered
    interval at ``level`` (see the module's docstring); None with no case."""
    n = len(shares)
    if n == 0:
        return None
    mean = fmean(shares)
    spread = sum((s - mean) ** 2 for s in shares) / (n - 1) if n > 1 else 0.0
    effective = float(runs)
    if spread > 0 and 0 < mean < 1:
        effective = min(effective, mean * (1 - mean) / (spread / n))
    z = t_quantile(1 - (1 - level) / 2, n - 1) if n > 1 else _NORMAL.inv_cdf(1 - (1 - level) / 2)
    if not math.isfinite(z):
        return mean, 0.0, 1.0
    scale = 1 + z * z / effective
    centre = (mean + z * z / (2 * effective)) / scale
    half = z * math.sqrt(mean * (1 - mean) / effective + z * z / (4 * effective**2)) / scale
    return mean, max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(
    values: Sequence[float], level: float = 0.95
) -> tuple[float, float, float] | None:
    """The mean of per-case ``values`` (scores) with the t interval on them."""
    n = len(values)
    if n == 0:
        return None
    mean = fmean(values)
    if n == 1:
        return mean, -math.inf, math.inf
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(1 - (1 - level) / 2, n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def pass_at_k(runs: int, passed: int, k: int) -> float:
    """The chance that at least one of k runs drawn from ``runs`` passes."""
    if runs - passed < k:
        return 1.0
    return 1.0 - math.comb(runs - passed, k) / math.comb(runs, k)


def pass_hat_k(runs: int, passed: int, k: int) -> float:
    """The chance that all k runs drawn from ``runs`` pass."""
    return math.comb(passed, k) / math.comb(runs, k)


def variance(groups: Sequence[Sequence[float]]) -> dict[str, float | None]:
    """The one-way ANOVA split of per-run values grouped by case: between cases, within a
    case, and the intraclass correlation (None when it cannot be estimated: fewer than two
    cases, or no case with two runs)."""
    groups = [g for g in groups if g]
    runs = sum(len(g) for g in groups)
    if len(groups) < 2 or runs <= len(groups):
        return {"between": None, "within": None, "icc": None}
    grand = fmean(v for g in groups for v in g)
    means = [fmean(g) for g in groups]
    within_ss = sum((v - m) ** 2 for g, m in zip(groups, means, strict=True) for v in g)
    between_ss = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means, strict=True))
    within = within_ss / (runs - len(groups))
    between_ms = between_ss / (len(groups) - 1)
    size = (runs - sum(len(g) ** 2 for g in groups) / runs) / (len(groups) - 1)
    between = max(0.0, (between_ms - within) / size)
    total = between + within
    return {"between": between, "within": within, "icc": between / total if total else None}


def summary(cases: Mapping[str, Tally], level: float = 0.95) -> dict[str, Any]:
    """pass@1 with its interval, pass@k and pass^k, flaky cases and the variance split of a
    scorer's pass/fail outcomes over repeated runs of ``cases``."""
    tallies = [t for t in cases.values() if t.runs]
    if not tallies:
        return {}
    found = clustered_interval(
        [t.passed / t.runs for t in tallies], sum(t.runs for t in tallies), level
    )
    assert found is not None
    fewest = min(t.runs for t in tallies)
    return {
        "cases": len(tallies),
        "runs_per_case": {"min": fewest, "max": max(t.runs for t in tallies)},
        "pass_at_1": {
            "estimate": found[0],
            "ci_low": found[1],
            "ci_high": found[2],
            "level": level,
        },
        "pass_at_k": {
            str(k): fmean(pass_at_k(t.runs, t.passed, k) for t in tallies)
            for k in range(1, fewest + 1)
        },
        "pass_hat_k": {
            str(k): fmean(pass_hat_k(t.runs, t.passed, k) for t in tallies)
            for k in range(1, fewest + 1)
        },
        "flaky_cases": sorted(c for c, t in cases.items() if 0 < t.passed < t.runs),
        "variance": variance([[1.0] * t.passed + [0.0] * (t.runs - t.passed) for t in tallies]),
    }


def score_summary(cases: Mapping[str, Sequence[float]], level: float = 0.95) -> dict[str, Any]:
    """The mean score over cases (repeats averaged) with its t interval, and the variance
    split of a score scorer's runs."""
    groups = [list(v) for v in cases.values() if v]
    if not groups:
        return {}
    found = mean_interval([fmean(g) for g in groups], level)
    assert found is not None
    return {
        "cases": len(groups),
        "runs_per_case": {"min": min(map(len, groups)), "max": max(map(len, groups))},
        "mean": {
            "estimate": found[0],
            "ci_low": _finite(found[1]),
            "ci_high": _finite(found[2]),
            "level": level,
        },
        "variance": variance(groups),
    }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
