"""Planning the next comparison from a finished experiment: how many cases, at how many
repeats, a comparison needs to catch a drop of a given size with chance :data:`power.POWER`.

Pass/fail scorers: each case's chance of passing is estimated from its runs and shrunk toward
the mean (:func:`~agentdocket.experiments.power.shrunk`); a candidate that is worse by ``drop``
points is modelled as each case's chance scaled down by ``drop / mean`` (cases that always fail
cannot get worse), and the sign test's power is computed exactly on the cases' chances of
moving up or down over ``k`` repeats a side (:func:`~agentdocket.experiments.power.sign_cases`).
From an experiment without repeats the split between cases and within a case cannot be
estimated: every case is taken at the mean, which gives the most changed cases, so the cases
it asks for are an upper bound.

Score scorers: a drop of ``drop`` in every case's mean, with the within-case spread of the
experiment's repeats (it needs some) as the only noise, through Noether's formula
(:func:`~agentdocket.experiments.power.signed_rank_cases`). A change that moves cases
unequally needs more: the figure is a lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist, fmean
from typing import Any

from agentdocket.experiments import power
from agentdocket.scorers import repeats as repeats_stats

REPEATS = (1, 2, 3, 5, 10)


def pass_fail_plan(
    tallies: Mapping[str, repeats_stats.Tally], drop: float, alpha: float
) -> dict[str, Any]:
    """Cases needed per repeats for a pass/fail scorer whose cases ran as ``tallies``."""
    found = [t for t in tallies.values() if t.runs]
    runs = [t.runs for t in found]
    repeated = max(runs, default=0) >= 2
    if repeated:
        chances = power.shrunk([t.passed for t in found], runs)
    else:
        mean = sum(t.passed for t in found) / max(1, sum(runs))
        chances = [mean] * len(found)
    mean = fmean(chances) if chances else 0.0
    rows = []
    for k in REPEATS:
        if mean <= drop or not chances:
            rows.append({"repeats": k, "cases": None})
            continue
        worse = [p * (1 - drop / mean) for p in chances]
        up, down = power.direction_chances(chances, worse, k)
        rows.append({"repeats": k, "cases": power.sign_cases(up, down, alpha)})
    return {
        "kind": "pass_fail",
        "cases": len(found),
        "pass_rate": mean,
        "variance": repeats_stats.variance(
            [[1.0] * t.passed + [0.0] * (t.runs - t.passed) for t in found]
        ),
        "estimated_from_repeats": repeated,
        "plan": rows,
    }


def score_plan(cases: Mapping[str, Sequence[float]], drop: float, alpha: float) -> dict[str, Any]:
    """Cases needed per repeats for a score scorer whose cases scored ``cases``."""
    groups = [list(v) for v in cases.values() if v]
    split = repeats_stats.variance(groups)
    within = split["within"]
    rows = []
    for k in REPEATS:
        if within is None:
            rows.append({"repeats": k, "cases": None})
            continue
        spread = math.sqrt(within / k)
        above = NormalDist().cdf(-drop / spread) if spread > 0 else 0.0
        rows.append({"repeats": k, "cases": power.signed_rank_cases(above, 1.0, alpha)})
    return {
        "kind": "score",
        "cases": len(groups),
        "mean": fmean(fmean(g) for g in groups) if groups else None,
        "variance": split,
        "estimated_from_repeats": within is not None,
        "plan": rows,
    }
