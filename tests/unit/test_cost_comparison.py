"""The cost of a change against its baseline: the ratio of mean costs per case with a paired
bootstrap interval, its coverage checked by simulation, and the sentence that reports it."""

from __future__ import annotations

import numpy as np
import pytest

from agentdocket.experiments.compare import Side
from agentdocket.experiments.costs import case_costs, cost_difference, ratio_bootstrap


def _panel(
    rng: np.random.Generator, n: int, r: float, skewed: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Paired costs: a case's baseline cost is log-normal (cases differ by a factor of e),
    the candidate's is it times r times noise of mean 0 on the log scale: normal, or skewed
    (a gamma shifted to mean 0: now and then a case costs the candidate much more)."""
    base = np.exp(rng.normal(-4.0, 1.0, n))
    noise = rng.gamma(2.0, 0.2, n) - 0.4 if skewed else rng.normal(0.0, 0.4, n)
    return base, base * r * np.exp(noise)


@pytest.mark.parametrize(("n", "skewed"), [(40, False), (120, False), (40, True), (120, True)])
def test_the_ratio_interval_covers_at_95_percent(n: int, skewed: bool) -> None:
    r = 0.7  # the typical case's ratio: exp(E[log c - log b])
    rng = np.random.default_rng(34)
    reps, covered = 1000, 0
    for rep in range(reps):
        base, cand = _panel(rng, n, r, skewed)
        found = ratio_bootstrap(base, cand, resamples=1000, seed=rep)
        assert found is not None
        covered += found[1] <= r <= found[2]
    share = covered / reps
    print(f"n={n} skewed={skewed}: coverage {share}")
    # 1000 replications: a true 95% lands in [0.936, 0.964] 95% of the time
    assert 0.93 <= share <= 0.97, share


def test_cases_with_an_unpriced_run_are_left_out_and_counted() -> None:
    baseline = Side("a", {"c1": ["b1", "b2"], "c2": ["b3"], "c3": ["b4"], "c4": ["b5"]})
    candidate = Side("b", {"c1": ["x1"], "c2": ["x2"], "c3": ["x3"], "c4": ["x4"]})
    costs = {"b1": 1.0, "b2": 3.0, "b3": 2.0, "b4": None, "b5": 4.0}
    costs |= {"x1": 1.0, "x2": 1.0, "x3": 5.0, "x4": 2.0}
    assert case_costs(baseline, costs) == {"c1": 2.0, "c2": 2.0, "c3": None, "c4": 4.0}
    out = cost_difference(baseline, candidate, costs, resamples=500)
    assert (out["cases"], out["cases_unpriced"]) == (3, 1)
    assert out["ratio"] == pytest.approx(0.5)  # each priced case costs half
    assert out["baseline_per_case_usd"] == pytest.approx(8 / 3)
    assert out["summary"].startswith("cost: ") and "1 cases left out" in out["summary"]


def test_the_sentence_says_cheaper_dearer_or_no_detectable_difference() -> None:
    rng = np.random.default_rng(1)
    base, cand = _panel(rng, 200, 0.7, False)
    ids = {f"c{i}": [f"b{i}"] for i in range(200)}
    costs = {f"b{i}": float(base[i]) for i in range(200)} | {
        f"x{i}": float(cand[i]) for i in range(200)
    }
    cheaper = cost_difference(
        Side("a", ids), Side("b", {c: [f"x{c[1:]}"] for c in ids}), costs, resamples=500
    )
    assert "cheaper (95% CI" in cheaper["summary"] and cheaper["ci_high"] < 1
    same = cost_difference(Side("a", ids), Side("b", ids), costs, resamples=500)
    assert same["summary"].startswith("cost: no detectable difference (+0%")
    assert ratio_bootstrap([0.0, 0.0], [1.0, 2.0]) is None  # the baseline cost nothing
