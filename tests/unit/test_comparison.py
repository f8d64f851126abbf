"""The comparison's statistics against SciPy's and brute force, the agreement of every
verdict's test, estimate and interval (by simulation, ties and zeros included), the trajectory
diff, and the method's coverage and error rate (by simulation)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from agentdocket.experiments import signed_rank, stats
from agentdocket.experiments.compare import BETTER, SAME, WORSE, Judged, Side, compare
from agentdocket.experiments.trajectory import diff, render


@pytest.mark.parametrize("b,c", [(0, 0), (0, 5), (3, 9), (10, 16), (40, 55), (1200, 1300)])
def test_the_sign_test_is_the_exact_binomial_test(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else scipy_stats.binomtest(b, b + c, 0.5).pvalue
    assert stats.sign_test(b, c) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("b,c,n", [(3, 9, 20), (0, 6, 6), (10, 16, 40), (40, 55, 114), (7, 0, 9)])
def test_the_pass_fail_interval_is_clopper_pearson_on_the_changed_cases(
    b: int, c: int, n: int
) -> None:
    """(2 pi - 1) m / n over SciPy's exact (Clopper-Pearson) interval of pi = b / m."""
    found = stats.proportions(b, c, n, 0.05)
    exact = scipy_stats.binomtest(b, b + c, 0.5).proportion_ci(0.95, "exact")
    scale = (b + c) / n
    assert found.estimate == pytest.approx((b - c) / n)
    assert found.low == pytest.approx((2 * exact.low - 1) * scale, abs=1e-9)
    assert found.high == pytest.approx((2 * exact.high - 1) * scale, abs=1e-9)
    # five changed cases or fewer can never reach 0.05: no bound is claimed
    assert stats.proportions(0, 5, 10, 0.05).low is None


def _walsh(d: list[float]) -> np.ndarray:
    nonzero = [x for x in d if x != 0]
    return np.sort(
        [(a + b) / 2 for i, a in enumerate(nonzero) for b in nonzero[i:]]  # i <= j
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_shift_estimate_and_interval_are_the_walsh_averages(seed: int) -> None:
    """Against the Walsh averages listed: the Hodges-Lehmann estimate is their median, the
    interval their (c+1)-th and (N-c)-th, on ties and zeros too."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    if seed % 2:
        d = list(rng.choice([-1.0, -0.5, -0.05, 0.0, 0.05, 0.25, 0.5, 1.0], size=n))
    else:
        d = list(rng.normal(0.2, 1, size=n))
    found = signed_rank.shift(d, 0.05)
    walsh = _walsh(d)
    if not len(walsh):
        assert found.changed == 0 and found.p_value == 1.0
        return
    assert found.estimate == np.median(walsh)
    c = signed_rank.critical(found.changed, 0.05)
    if c < 0:
        assert found.low is None and not found.significant
    else:
        assert (found.low, found.high) == (walsh[c], walsh[len(walsh) - c - 1])


def test_the_shift_test_is_wilcoxons_without_ties() -> None:
    rng = np.random.default_rng(1)
    for n in (6, 12, 25):
        d = rng.normal(0.3, 1, size=n)
        exact = scipy_stats.wilcoxon(d, method="exact").pvalue
        assert signed_rank.shift(list(d), 0.05).p_value == pytest.approx(exact, rel=1e-9)
    large = rng.normal(0.1, 1, size=800)
    approx = scipy_stats.wilcoxon(large, correction=True, method="approx").pvalue
    assert signed_rank.shift(list(large), 0.05).p_value == pytest.approx(approx, rel=1e-3)


def test_the_shift_finds_the_kth_walsh_average_past_the_listing_limit() -> None:
    """Beyond the sums it lists at once, the bisection narrows down first; the same answer."""
    rng = np.random.default_rng(5)
    d = np.round(rng.normal(0.1, 1, size=1200), 2)  # 720,600 sums, many tied
    walsh = _walsh(list(d))
    found = signed_rank.shift(list(d), 0.01)
    c = signed_rank.critical(found.changed, 0.01)
    assert found.estimate == np.median(walsh)
    assert (found.low, found.high) == (walsh[c], walsh[len(walsh) - c - 1])


def _random_pair(rng: np.random.Generator, kind: str) -> tuple[Side, Side, dict[str, Judged]]:
    """Random paired data of 1 to 40 cases and 1 to 3 repeats: pass/fail, or scores on a
    coarse grid (ties and zeros), some runs unanswered."""
    n, k = int(rng.integers(1, 41)), int(rng.integers(1, 4))
    base = Side("A", {f"c{i}": [f"a{i}.{r}" for r in range(k)] for i in range(n)})
    cand = Side("B", {f"c{i}": [f"b{i}.{r}" for r in range(k)] for i in range(n)})
    judged: dict[str, Judged] = {}
    level = rng.uniform(0.1, 0.9, size=n)
    for side, shift in (("a", 0.0), ("b", float(rng.choice([-0.3, -0.1, 0.0, 0.1, 0.3])))):
        for i in range(n):
            for r in range(k):
                if rng.random() < 0.05:
                    judged[f"{side}{i}.{r}"] = Judged(None, None, "response:missing")
                elif kind == "pass_fail":
                    passed = bool(rng.random() < np.clip(level[i] + shift, 0, 1))
                    judged[f"{side}{i}.{r}"] = Judged(passed, None, None if passed else "x:no")
                else:
                    score = round(float(level[i] + shift + rng.normal(0, 0.1)) * 4) / 4
                    judged[f"{side}{i}.{r}"] = Judged(None, score)
    return base, cand, judged


@pytest.mark.parametrize("kind", ["pass_fail", "score"])
def test_every_verdict_agrees_with_its_test_estimate_and_interval(kind: str) -> None:
    """3,000 random comparisons (ties, zeros, repeats, unanswered runs): a scorer is
    significant exactly when its interval leaves out zero, and a verdict's direction is its
    estimate's sign, whatever level the adjustment decided it at."""
    rng = np.random.default_rng(46 if kind == "pass_fail" else 47)
    seen = {BETTER: 0, WORSE: 0, SAME: 0}
    for _ in range(3000):
        base, cand, judged = _random_pair(rng, kind)
        other = dict(judged)  # a second scorer, so that the family is adjusted
        result = compare(base, cand, {"s": judged, "t": other})
        for entry in result["scorers"].values():
            if entry["status"] == "no data":
                continue
            d = entry["difference"]
            excludes = d["ci_low"] is not None and (d["ci_low"] > 0 or d["ci_high"] < 0)
            assert entry["significant"] == excludes, entry
            assert entry["significant"] == (entry["p_value"] <= entry["threshold"])
            if d["ci_low"] is not None:
                assert d["ci_low"] <= d["estimate"] <= d["ci_high"], entry
            seen[entry["verdict"]] += 1
            if entry["verdict"] == BETTER:
                assert d["estimate"] > 0
            elif entry["verdict"] == WORSE:
                assert d["estimate"] < 0
    assert min(seen.values()) > 50, seen  # every verdict was reached


def test_with_every_hypothesis_testable_the_adjustment_is_holms() -> None:
    found = stats.tarone_holm([0.01, 0.04, 0.03, 0.5], [0.0] * 4, 0.05)
    assert found.adjusted == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert found.rejected == [True, False, False, False]
    # decided at 0.05 / 4, then every other at the threshold that stopped the rejections
    assert found.thresholds == pytest.approx([0.0125, 0.05 / 3, 0.05 / 3, 0.05 / 3])


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
    result = compare(a, b, v)
    s = result["scorers"]["s"]
    assert (s["improved"], s["regressed"], s["verdict"]) == (20, 0, BETTER)
    assert s["p_value"] == pytest.approx(2 * 0.5**20)
    assert s["difference"]["estimate"] == pytest.approx(20 / 30)
    assert s["difference"]["measure"] == "difference in pass rates"
    assert s["baseline"]["n"] == 30 and s["baseline"]["rate"] == pytest.approx(1 / 3)
    a, b, v = _sides(cand, base)
    assert compare(a, b, v)["scorers"]["s"]["verdict"] == WORSE
    assert compare(a, b, v)["regression"] is True
    a, b, v = _sides([0, 1, 0, 1], [1, 0, 0, 1])
    assert compare(a, b, v)["scorers"]["s"]["verdict"] == SAME


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
    """1,000 simulated paired experiments of 200 cases: the 95% interval of the difference in
    pass rates covers the known difference in 93-98% of them (it is conditional on the cases
    that changed, and exact: a little conservative); with no difference, 'worse' in at most
    5%."""
    rng = np.random.default_rng(2026)
    n, sims = 200, 1000
    covered = 0
    for _ in range(sims):
        # a case's chance of passing is shared by both sides (the pairing); the candidate's is
        # 8 points higher on every case: the true difference is 0.08
        chance = rng.uniform(0.2, 0.9, size=n)
        base = rng.random(n) < chance
        cand = rng.random(n) < chance + 0.08
        found = stats.proportions(int((cand & ~base).sum()), int((base & ~cand).sum()), n, 0.05)
        assert found.low is not None and found.high is not None
        covered += found.low <= 0.08 <= found.high
    assert 0.93 <= covered / sims <= 0.98, covered
    worse = 0
    for _ in range(sims):
        difficulty = rng.uniform(0.2, 0.9, size=60)
        base_l = (rng.random(60) < difficulty).astype(int).tolist()
        cand_l = (rng.random(60) < difficulty).astype(int).tolist()
        a, b, v = _sides(base_l, cand_l)
        worse += compare(a, b, v)["scorers"]["s"]["verdict"] == WORSE
    assert worse / sims <= 0.05, worse
