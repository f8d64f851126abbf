"""Comparing two sets of runs of one dataset, case by case: is the candidate better than the
baseline, worse, or is the difference noise?

Runs pair by case; a side's repeats of a case are averaged. Per scorer, with both sides read
at the same scorer version:

- pass/fail scorers: each side's pass rate; the cases that improved (the candidate's rate
  above the baseline's) and regressed; the exact McNemar p-value on those discordant cases
  (:func:`~agentdocket.experiments.stats.sign_test`);
- scoring scorers (no pass/fail): each side's mean score; the Wilcoxon signed-rank p-value;
- both: the mean paired difference (candidate - baseline) with a paired bootstrap 95%
  interval, cases resampled;
- the family's adjustment and the gate (:mod:`agentdocket.experiments.gate`): Holm's
  step-down with Tarone's refinement over the scorers that can be tested; the verdict
  ``better`` or ``worse`` when significant (by the difference's sign), else ``no detectable
  difference``;
- the cases that changed under any scorer, each once, with every scorer's value on both sides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdocket.experiments import stats
from agentdocket.experiments.gate import BETTER, SAME, WORSE, decide
from agentdocket.experiments.trajectory import Call, diff

__all__ = ["BETTER", "SAME", "WORSE", "Judged", "Side", "compare", "group_runs", "selected"]


@dataclass(frozen=True)
class Judged:
    """One run's latest verdict of one scorer."""

    passed: bool | None
    score: float | None
    failure_type: str | None = None


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label and its runs' trace ids by case."""

    label: str
    runs: Mapping[str, Sequence[str]]  # case id -> trace ids (repeats)


@dataclass
class _Values:
    by_case: dict[str, float] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)  # case -> a judged run's trace id


def _values(side: Side, judged: Mapping[str, Judged], decides: bool) -> _Values:
    out = _Values()
    for case, traces in side.runs.items():
        got = [(t, judged[t]) for t in traces if t in judged]
        if decides:
            found = [(t, 1.0 if v.passed else 0.0) for t, v in got if v.passed is not None]
        else:
            found = [(t, float(v.score)) for t, v in got if v.score is not None]
        if not found:
            continue
        out.by_case[case] = sum(x for _, x in found) / len(found)
        out.first[case] = found[0][0]
        out.failures[case] = sorted({v.failure_type for _, v in got if v.failure_type})
    return out


def _summary(values: _Values, decides: bool) -> dict[str, Any]:
    n = len(values.by_case)
    total = sum(values.by_case.values())
    return {
        "n": n,
        "passed": round(total, 6) if decides else None,
        "rate": total / n if n else None,
    }


def compare(
    baseline: Side,
    candidate: Side,
    verdicts: Mapping[str, Mapping[str, Judged]],
    *,
    alpha: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    calls: Callable[[str], Sequence[Call]] | None = None,
    primary: Sequence[str] = (),
    max_drop: float | None = None,
) -> dict[str, Any]:
    """The comparison as JSON: ``verdicts`` maps scorer -> trace id -> its verdict; ``calls``
    gives a run's tool calls, for the trajectory diffs of the cases that changed;
    ``primary`` and ``max_drop`` set the gate (:mod:`agentdocket.experiments.gate`)."""
    scorers: dict[str, dict[str, Any]] = {}
    values: dict[str, tuple[_Values, _Values]] = {}
    for name, judged in verdicts.items():
        decides = any(v.passed is not None for v in judged.values())
        base, cand = _values(baseline, judged, decides), _values(candidate, judged, decides)
        values[name] = (base, cand)
        scorers[name] = _scorer(base, cand, decides, resamples, seed)
    result = {
        "baseline": baseline.label,
        "candidate": candidate.label,
        "alpha": alpha,
        "resamples": resamples,
        "scorers": scorers,
        "cases": _changed(scorers, values, calls),
    }
    result.update(decide(scorers, alpha=alpha, primary=primary, max_drop=max_drop))
    return result


def _scorer(
    base: _Values, cand: _Values, decides: bool, resamples: int, seed: int
) -> dict[str, Any]:
    """One scorer's sides, changes, difference and test (not yet its family's adjustment)."""
    paired = sorted(set(base.by_case) & set(cand.by_case))
    differences = [cand.by_case[c] - base.by_case[c] for c in paired]
    improved = [c for c, d in zip(paired, differences, strict=True) if d > 0]
    regressed = [c for c, d in zip(paired, differences, strict=True) if d < 0]
    estimate, low, high = stats.bootstrap(differences, resamples=resamples, seed=seed)
    if decides:
        p = stats.sign_test(len(improved), len(regressed))
        floor = stats.sign_test_floor(len(improved) + len(regressed))
    else:
        p, floor = stats.wilcoxon(differences), stats.wilcoxon_floor(differences)
    return {
        "kind": "pass_fail" if decides else "score",
        "test": "mcnemar" if decides else "wilcoxon",
        "baseline": _summary(base, decides),
        "candidate": _summary(cand, decides),
        "paired": len(paired),
        "improved": len(improved),
        "regressed": len(regressed),
        "difference": {"estimate": _num(estimate), "ci_low": _num(low), "ci_high": _num(high)},
        "p_value": p,
        "p_floor": floor,
    }


def _changed(
    scorers: Mapping[str, Mapping[str, Any]],
    values: Mapping[str, tuple[_Values, _Values]],
    calls: Callable[[str], Sequence[Call]] | None,
) -> list[dict[str, Any]]:
    """Every case that changed under any scorer, once, with each scorer's value on both sides
    (a pass/fail scorer's pass rate and failure types, a score's value) and what changed."""
    cases: dict[str, dict[str, Any]] = {}
    for name, (base, cand) in values.items():
        for case in sorted(set(base.by_case) & set(cand.by_case)):
            before, after = base.by_case[case], cand.by_case[case]
            entry = cases.setdefault(case, {"case_id": case, "change": {}, "scorers": {}})
            change = "improved" if after > before else "regressed" if after < before else "same"
            entry["scorers"][name] = {
                "kind": scorers[name]["kind"],
                "change": change,
                "baseline": {
                    "value": before,
                    "failure_types": base.failures[case],
                    "trace_id": base.first[case],
                },
                "candidate": {
                    "value": after,
                    "failure_types": cand.failures[case],
                    "trace_id": cand.first[case],
                },
            }
            if change != "same":
                entry["change"][name] = change
    out = []
    for case in sorted(cases, key=lambda c: (-len(cases[c]["change"]), c)):
        entry = cases[case]
        if not entry["change"]:
            continue
        if calls is not None:
            first = next(iter(entry["scorers"].values()))
            entry["trajectory"] = diff(
                calls(first["baseline"]["trace_id"]), calls(first["candidate"]["trace_id"])
            )
        out.append(entry)
    return out


def _num(x: float) -> float | None:
    return None if x != x else x  # NaN (no paired case) as null


def selected(runs: Iterable[Mapping[str, Any]], selection: str) -> list[Mapping[str, Any]]:
    """The runs (rows with ``agent``, ``agent_version`` and ``attributes``) a selection
    names: ``experiment:NAME``, or ``AGENT[@VERSION]``."""
    if selection.startswith("experiment:"):
        name = selection.removeprefix("experiment:")
        return [r for r in runs if (r["attributes"] or {}).get("experiment") == name]
    agent, _, version = selection.partition("@")
    return [
        r for r in runs if r["agent"] == agent and (not version or r["agent_version"] == version)
    ]


def group_runs(runs: Sequence[tuple[str, str | None]]) -> dict[str, list[str]]:
    """(trace id, case id) pairs -> trace ids by case (runs with no case are left out)."""
    out: dict[str, list[str]] = defaultdict(list)
    for trace, case in runs:
        if case is not None:
            out[case].append(trace)
    return dict(out)
