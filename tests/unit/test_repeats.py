"""Repeated trials: pass@k and pass^k against every subset of runs, the variance split against
its definition, Student's t against SciPy, and (by simulation) the coverage of pass@1's
case-clustered interval."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from agentdocket.scorers import repeats
from agentdocket.scorers.repeats import Tally


@pytest.mark.parametrize("runs,passed", [(1, 0), (1, 1), (3, 1), (5, 2), (5, 5), (6, 0), (7, 4)])
def test_pass_at_k_and_pass_hat_k_average_every_subset_of_k_runs(runs: int, passed: int) -> None:
    outcomes = [True] * passed + [False] * (runs - passed)
    for k in range(1, runs + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert repeats.pass_at_k(runs, passed, k) == pytest.approx(
            sum(any(s) for s in subsets) / len(subsets)
        )
        assert repeats.pass_hat_k(runs, passed, k) == pytest.approx(
            sum(all(s) for s in subsets) / len(subsets)
        )


def test_the_summary_of_three_repeats() -> None:
    found = repeats.summary(
        {"a": Tally(3, 3), "b": Tally(3, 2), "c": Tally(3, 0), "d": Tally(3, 3)}
    )
    assert found["pass_at_1"]["estimate"] == pytest.approx((1 + 2 / 3 + 0 + 1) / 4)
    assert found["pass_at_k"]["3"] == pytest.approx(3 / 4)
    assert found["pass_hat_k"]["3"] == pytest.approx(2 / 4)
    assert found["flaky_cases"] == ["b"]
    assert found["runs_per_case"] == {"min": 3, "max": 3}


def test_the_variance_split_is_the_one_way_analysis_of_variance() -> None:
    """Balanced groups: within = the mean of the groups' sample variances, between = the
    variance of the group means less within / k."""
    rng = np.random.default_rng(3)
    groups = [list(rng.normal(m, 1.0, size=4)) for m in rng.normal(0, 2.0, size=30)]
    found = repeats.variance(groups)
    within = float(np.mean([np.var(g, ddof=1) for g in groups]))
    between = float(np.var([np.mean(g) for g in groups], ddof=1)) - within / 4
    assert found["within"] == pytest.approx(within)
    assert found["between"] == pytest.approx(between)
    assert found["icc"] == pytest.approx(between / (between + within))
    assert repeats.variance([[1.0], [0.0]])["icc"] is None  # no case ran twice


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 19, 49, 99])
def test_the_t_quantile_is_students(df: int) -> None:
    for q in (0.9, 0.975, 0.995):
        assert repeats.t_quantile(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-6)


@pytest.mark.slow
def test_the_clustered_interval_covers_pass_at_1() -> None:
    """Cases of heterogeneous difficulty (beta distributions of mean 0.3 to 0.85, of
    concentration 2 and 10), 10 to 100 cases, 1, 3 and 5 repeats: the 95% interval of pass@1
    covers the mean of the difficulty distribution at least 93% of the time in every setting,
    over 1,000 simulated experiments each (seeded)."""
    rng = np.random.default_rng(46)
    worst, cells = 1.0, []
    for mean, concentration, cases, k in itertools.product(
        (0.3, 0.5, 0.7, 0.85), (2.0, 10.0), (10, 20, 50, 100), (1, 3, 5)
    ):
        covered = 0
        for _ in range(1000):
            chance = rng.beta(mean * concentration, (1 - mean) * concentration, size=cases)
            passed = rng.binomial(k, chance)
            found = repeats.clustered_interval(list(passed / k), cases * k)
            assert found is not None
            covered += found[1] <= mean <= found[2]
        cells.append(covered / 1000)
        worst = min(worst, covered / 1000)
    assert worst >= 0.93, worst
    assert sum(cells) / len(cells) >= 0.945
    assert math.isfinite(worst)
