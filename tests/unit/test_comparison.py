"""The comparison's statistics against SciPy's and exhaustive enumeration, its verdicts on
small paired data, the trajectory diff, and (by simulation) the method's coverage and error
rate."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from agentdocket.experiments import stats
from agentdocket.experiments.compare import BETTER, SAME, WORSE, Judged, Side, compare
from agentdocket.experiments.trajectory import diff, render


@pytest.mark.parametrize("b,c", [(0, 0), (0, 5), (3, 9), (10, 16), (40, 55), (1200, 1300)])
def test_the_sign_test_is_the_exact_binomial_test(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy_stats.binomtest(b, b + c, 0.5).pvalue
    assert stats.sign_test(b, c) == pytest.approx(expected, rel=1e-9)


def _enumerated(d: list[float]) -> float:
    """The exact two-sided signed-rank p-value by enumerating every sign assignment."""
    nonzero = [x for x in d if x != 0]
    ranks = list(stats._ranks(np.abs(np.asarray(nonzero))))
    observed = sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0)
    mean = sum(ranks) / 2
    extreme = sum(
        1
        for signs in itertools.product((0, 1), repeat=len(ranks))
        if abs(sum(r for r, s in zip(ranks, signs, strict=True) if s) - mean)
        >= abs(observed - mean) - 1e-9
    )
    return extreme / 2 ** len(ranks)


@pytest.mark.parametrize("seed", range(6))
def test_wilcoxon_exact_with_ties_matches_enumeration(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = list(rng.choice([-2, -1, -0.5, 0, 0.5, 1, 2, 3], size=11))
    assert stats.wilcoxon(d) == pytest.approx(_enumerated(d), rel=1e-9)


def test_wilcoxon_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    small = rng.normal(0.3, 1, size=25)  # no ties: SciPy's exact distribution
    exact = scipy_stats.wilcoxon(small, method="exact").pvalue
    assert stats.wilcoxon(list(small)) == pytest.approx(exact, rel=1e-9)
    large = np.round(rng.normal(0.1, 1, size=800), 1)  # ties: the normal approximation
    approx = scipy_stats.wilcoxon(
        large, zero_method="wilcox", correction=True, method="approx"
    ).pvalue
    assert stats.wilcoxon(list(large)) == pytest.approx(approx, rel=1e-6)


def test_with_every_hypothesis_testable_the_adjustment_is_holms() -> None:
    rejected, adjusted = stats.tarone_holm([0.01, 0.04, 0.03, 0.5], [0.0] * 4, 0.05)
    assert adjusted == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert rejected == [True, False, False, False]


def test_the_bootstrap_is_reproducible_and_brackets_the_mean() -> None:
    d = [1.0, 0.0, 0.0, 1.0, -1.0, 1.0, 0.0, 1.0]
    first = stats.bootstrap(d, resamples=500, seed=3)
    assert first == stats.bootstrap(d, resamples=500, seed=3)
    estimate, low, high = first
    assert estimate == pytest.approx(0.375) and low < estimate < high


def _sides(base: list[int], cand: list[int]) -> tuple[Side, Side, dict[str, dict[str, Judged]]]:
    judged: dict[str, Judged] = {}
    for i, (b, c) in enumerate(zip(base, cand, strict=True)):
        judged[f"b{i}"] = Judged(bool(b), None, None if b else "x:fail")
        judged[f"c{i}"] = Judged(bool(c), None, None if c else "x:fail")
    baseline = Side("A", {f"case{i}": [f"b{i}"] for i in range(len(base))})
    candidate = Side("B", {f"case{i}": [f"c{i}"] for i in range(len(cand))})
    return baseline, candidate, {"s": judged}


def test_verdicts_follow_the_adjusted_test() -> None:
    # 30 cases: 20 improved, 0 regressed -> better; the reverse -> worse
    base, cand = [0] * 20 + [1] * 10, [1] * 30
    a, b, v = _sides(base, cand)
    result = compare(a, b, v, resamples=500)
    s = result["scorers"]["s"]
    assert (s["improved"], s["regressed"], s["verdict"]) == (20, 0, BETTER)
    assert s["p_value"] == pytest.approx(2 * 0.5**20)
    assert s["baseline"] == {"n": 30, "passed": 10.0, "rate": pytest.approx(1 / 3)}
    a, b, v = _sides(cand, base)
    assert compare(a, b, v, resamples=500)["scorers"]["s"]["verdict"] == WORSE
    assert compare(a, b, v, resamples=500)["regression"] is True
    a, b, v = _sides([0, 1, 0, 1], [1, 0, 0, 1])
    assert compare(a, b, v, resamples=500)["scorers"]["s"]["verdict"] == SAME


def test_a_trajectory_diff_aligns_the_tool_calls() -> None:
    base = [("search", {"q": "a"}), ("read", {"id": 1}), ("answer", {})]
    cand = [("search", {"q": "b"}), ("answer", {}), ("log", {})]
    steps = diff(base, cand)
    assert [s["op"] for s in steps] == ["changed", "deleted", "same", "inserted"]
    assert steps[0]["arguments"] == {"q": ["a", "b"]}
    assert render(steps) == ["~ search (q: 'a' -> 'b')", "- read", "  answer", "+ log"]
    assert [s["op"] for s in diff([("a", {})], [("b", {})])] == ["substituted"]


@pytest.mark.slow
def test_the_interval_covers_the_true_difference_and_worse_is_rarely_declared() -> None:
    """1,000 simulated paired experiments of 200 cases: the 95% interval covers the known
    difference in 93-97% of them; with no difference, 'worse' in at most 5%."""
    rng = np.random.default_rng(2026)
    n, sims = 200, 1000
    covered = 0
    for k in range(sims):
        # a case's chance of passing is shared by both sides (the pairing); the candidate's is
        # 8 points higher on every case: the true difference is 0.08
        chance = rng.uniform(0.2, 0.9, size=n)
        base = rng.random(n) < chance
        cand = rng.random(n) < chance + 0.08
        _, low, high = stats.bootstrap(
            (cand.astype(float) - base.astype(float)).tolist(), resamples=1000, seed=k
        )
        covered += low <= 0.08 <= high
    assert 0.93 <= covered / sims <= 0.97, covered
    worse = 0
    for k in range(sims):
        difficulty = rng.uniform(0.2, 0.9, size=60)
        base = (rng.random(60) < difficulty).astype(int).tolist()
        cand = (rng.random(60) < difficulty).astype(int).tolist()
        a, b, v = _sides(base, cand)
        worse += compare(a, b, v, resamples=200, seed=k)["scorers"]["s"]["verdict"] == WORSE
    assert worse / sims <= 0.05, worse
