"""Comparing two sets of runs of one dataset, case by case: is the candidate better than the
baseline, worse, or can the data not tell?

Runs pair by case (:mod:`.pairing`: every run asked for counted, a run without an answer a
failure, a case that lost its answer named). Per scorer, with both sides read at the same
scorer version:

- pass/fail scorers: each side's pass rate; the cases that improved (the candidate's share of
  passing runs above the baseline's) and regressed; the exact sign test on them (McNemar's,
  one run a case a side), the difference in pass rates with the interval inverting it
  (:func:`~agentdocket.experiments.stats.proportions`);
- score scorers: each side's mean score; the signed-rank test, the Hodges-Lehmann shift and
  the interval inverting it (:mod:`~agentdocket.experiments.signed_rank`); the mean
  difference beside it, labelled;
- the family's adjustment, each scorer's outcome and the gate (:mod:`.gate`);
- the cases that changed under any scorer, each once, with every scorer's value on both sides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentdocket.experiments.gate import BETTER, SAME, WORSE, decide
from agentdocket.experiments.pairing import (
    CaseValues,
    Judged,
    Paired,
    Side,
    group_runs,
    pair,
    selected,
)
from agentdocket.experiments.trajectory import Call, diff

__all__ = ["BETTER", "SAME", "WORSE", "Judged", "Side", "compare", "group_runs", "selected"]


def compare(
    baseline: Side,
    candidate: Side,
    verdicts: Mapping[str, Mapping[str, Judged]],
    *,
    alpha: float = 0.05,
    calls: Callable[[str], Sequence[Call]] | None = None,
    primary: Sequence[str] = (),
    max_drop: float | None = None,
    sessions: tuple[Side, Side] | None = None,
) -> dict[str, Any]:
    """The comparison as JSON: ``verdicts`` maps scorer -> trace id -> its verdict; ``calls``
    gives a run's tool calls, for the trajectory diffs of the cases that changed;
    ``primary`` and ``max_drop`` set the gate (:mod:`agentdocket.experiments.gate`).
    ``sessions``: the two sides' sessions, each as its last turn (where a session scorer's
    verdict is kept), by case: session scorers (``session.*``) pair those."""
    pairs = {
        name: pair(
            name,
            *(
                sessions
                if sessions is not None and name.startswith("session.")
                else (baseline, candidate)
            ),
            judged,
        )
        for name, judged in verdicts.items()
    }
    scorers, gate = decide(pairs, alpha=alpha, primary=primary, max_drop=max_drop)
    return {
        "baseline": baseline.label,
        "candidate": candidate.label,
        "alpha": alpha,
        "scorers": scorers,
        "cases": _changed(scorers, pairs, calls),
        "outcome": gate["outcome"],
        "regression": gate["outcome"] == WORSE,
        "gate": gate,
    }


def _changed(
    scorers: Mapping[str, Mapping[str, Any]],
    pairs: Mapping[str, Paired],
    calls: Callable[[str], Sequence[Call]] | None,
) -> list[dict[str, Any]]:
    """Every case that changed under any scorer (or lost its answer), once, with each
    scorer's value on both sides (a pass/fail scorer's pass share and failure types, a
    score's value) and what changed."""
    cases: dict[str, dict[str, Any]] = {}
    for name, found in pairs.items():
        base, cand = found.base, found.cand
        for case in sorted((set(base.value) & set(cand.value)) | set(found.lost)):
            before, after = base.value.get(case), cand.value.get(case)
            entry = cases.setdefault(case, {"case_id": case, "change": {}, "scorers": {}})
            if case in found.lost:
                change = "lost its answer"
            elif before is None or after is None:
                continue
            else:
                change = "improved" if after > before else "regressed" if after < before else "same"
            entry["scorers"][name] = {
                "kind": scorers[name]["kind"],
                "change": change,
                "baseline": _side(base, case),
                "candidate": _side(cand, case),
            }
            if change != "same":
                entry["change"][name] = change
    out = []
    for case in sorted(cases, key=lambda c: (-len(cases[c]["change"]), c)):
        entry = cases[case]
        if not entry["change"]:
            continue
        if calls is not None:
            traced = [
                s
                for s in entry["scorers"].values()
                if s["baseline"]["trace_id"] and s["candidate"]["trace_id"]
            ]
            if traced:
                entry["trajectory"] = diff(
                    calls(traced[0]["baseline"]["trace_id"]),
                    calls(traced[0]["candidate"]["trace_id"]),
                )
        out.append(entry)
    return out


def _side(values: CaseValues, case: str) -> dict[str, Any]:
    return {
        "value": values.value.get(case),
        "failure_types": values.failures.get(case, []),
        "missing": dict(values.missing.get(case, {})),
        "trace_id": values.first.get(case),
    }
