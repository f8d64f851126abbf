"""What a change costs, case by case: each side's cost per case (its runs' priced model
calls, repeats averaged) and the candidate's cost against the baseline's as the typical case's
ratio (the geometric mean of the per-case ratios) with a paired bootstrap interval, cases
resampled ("31% cheaper, 95% CI 24-38%"). The mean cost per case of each side is given
beside it. Why the geometric mean: per-case costs are skewed, a few long cases weigh most,
and the ratio of the two means, though what a bill adds up, has intervals that covered only
91-94% of the time in the tests' simulations; the mean of per-case log ratios covers 95%.

A run any of whose calls no price covers has no cost; a case missing a cost on either side
(or costing nothing on one) is left out of the ratio and counted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from agentdocket.experiments.compare import Side


def case_costs(side: Side, run_costs: Mapping[str, float | None]) -> dict[str, float | None]:
    """Each case's mean cost over its runs (None when a run of it has no cost)."""
    out: dict[str, float | None] = {}
    for case, traces in side.runs.items():
        costs = [run_costs.get(t) for t in traces]
        out[case] = (
            None
            if not costs or None in costs
            else sum(c for c in costs if c is not None) / len(costs)
        )
    return out


def ratio_bootstrap(
    baseline: Sequence[float],
    candidate: Sequence[float],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float] | None:
    """The typical case's cost ratio, candidate over baseline: the geometric mean of the
    per-case ratios, exp(mean(log c - log b)), with the studentized bootstrap interval of
    that mean (bootstrap-t: each resample of the cases standardised by its own standard
    error, so that skewed ratios and few cases are allowed for). None when fewer than three
    cases cost something on both sides."""
    d = np.array(
        [
            math.log(c) - math.log(b)
            for b, c in zip(baseline, candidate, strict=True)
            if b > 0 and c > 0
        ]
    )
    n = len(d)
    if n < 3:
        return None
    mean, se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        return math.exp(mean), math.exp(mean), math.exp(mean)
    drawn = d[np.random.default_rng(seed).integers(0, n, size=(resamples, n))]
    spread = drawn.std(axis=1, ddof=1) / math.sqrt(n)
    kept = spread > 0
    t = (drawn.mean(axis=1)[kept] - mean) / spread[kept]
    tail = (1 - level) / 2
    low_t, high_t = np.quantile(t, [tail, 1 - tail])
    return math.exp(mean), math.exp(mean - high_t * se), math.exp(mean - low_t * se)


def cost_difference(
    baseline: Side,
    candidate: Side,
    run_costs: Mapping[str, float | None],
    *,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The cost comparison as JSON, and the sentence that says it."""
    base, cand = case_costs(baseline, run_costs), case_costs(candidate, run_costs)
    both = sorted(k for k in base.keys() & cand.keys())
    pairs = [(x, y) for k in both if (x := base[k]) is not None and (y := cand[k]) is not None]
    b = [x for x, _ in pairs]
    c = [y for _, y in pairs]
    found = ratio_bootstrap(b, c, resamples=resamples, seed=seed)
    out: dict[str, Any] = {
        "cases": len(pairs),
        "cases_unpriced": len(both) - len(pairs),
        "baseline_per_case_usd": sum(b) / len(b) if b else None,
        "candidate_per_case_usd": sum(c) / len(c) if c else None,
        "ratio": None,
        "ci_low": None,
        "ci_high": None,
    }
    if found is None:
        out["summary"] = "cost: not comparable (no priced case on both sides)"
        return out
    ratio, low, high = found
    out.update(ratio=ratio, ci_low=low, ci_high=high)
    out["summary"] = f"cost: {_words(ratio, low, high)}" + (
        f"; {out['cases_unpriced']} cases left out (unpriced calls)"
        if out["cases_unpriced"]
        else ""
    )
    return out


def _words(ratio: float, low: float, high: float) -> str:
    def pct(x: float) -> str:
        return f"{100 * abs(1 - x):.0f}%"

    if high < 1:
        return f"{pct(ratio)} cheaper (95% CI {pct(high)}-{pct(low)})"
    if low > 1:
        return f"{pct(ratio)} dearer (95% CI {pct(low)}-{pct(high)})"
    change, lo, hi = (f"{100 * (x - 1):+.0f}%" for x in (ratio, low, high))
    return f"no detectable difference ({change}, 95% CI {lo} to {hi})"
