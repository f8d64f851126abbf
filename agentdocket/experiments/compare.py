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
- Holm's adjustment across the scorers compared; the verdict ``better`` or ``worse`` when the
  adjusted p-value is below ``alpha`` (by the difference's sign), else ``no detectable
  difference``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdocket.experiments import stats
from agentdocket.experiments.trajectory import Call, diff

BETTER, WORSE, SAME = "better", "worse", "no detectable difference"


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
) -> dict[str, Any]:
    """The comparison as JSON: ``verdicts`` maps scorer -> trace id -> its verdict; ``calls``
    gives a run's tool calls, for the trajectory diffs of the cases that changed."""
    scorers: dict[str, dict[str, Any]] = {}
    changed: dict[str, list[dict[str, Any]]] = {}
    for name, judged in verdicts.items():
        decides = any(v.passed is not None for v in judged.values())
        base, cand = _values(baseline, judged, decides), _values(candidate, judged, decides)
        paired = sorted(set(base.by_case) & set(cand.by_case))
        differences = [cand.by_case[c] - base.by_case[c] for c in paired]
        improved = [c for c, d in zip(paired, differences, strict=True) if d > 0]
        regressed = [c for c, d in zip(paired, differences, strict=True) if d < 0]
        estimate, low, high = stats.bootstrap(differences, resamples=resamples, seed=seed)
        p = (
            stats.sign_test(len(improved), len(regressed))
            if decides
            else stats.wilcoxon(differences)
        )
        scorers[name] = {
            "kind": "pass_fail" if decides else "score",
            "test": "mcnemar" if decides else "wilcoxon",
            "baseline": _summary(base, decides),
            "candidate": _summary(cand, decides),
            "paired": len(paired),
            "improved": len(improved),
            "regressed": len(regressed),
            "difference": {
                "estimate": _num(estimate),
                "ci_low": _num(low),
                "ci_high": _num(high),
            },
            "p_value": p,
        }
        changed[name] = [_case(c, "regressed", base, cand, calls) for c in sorted(regressed)]
        changed[name] += [_case(c, "improved", base, cand, calls) for c in sorted(improved)]
    names = list(scorers)
    for name, adjusted in zip(
        names, stats.holm([scorers[n]["p_value"] for n in names]), strict=True
    ):
        entry = scorers[name]
        entry["p_adjusted"] = adjusted
        estimate = entry["difference"]["estimate"] or 0.0
        entry["verdict"] = (
            (BETTER if estimate > 0 else WORSE if estimate < 0 else SAME)
            if adjusted < alpha
            else SAME
        )
        entry["cases"] = changed[name]
    return {
        "baseline": baseline.label,
        "candidate": candidate.label,
        "alpha": alpha,
        "resamples": resamples,
        "scorers": scorers,
        "regression": any(s["verdict"] == WORSE for s in scorers.values()),
    }


def _num(x: float) -> float | None:
    return None if x != x else x  # NaN (no paired case) as null


def _case(
    case: str,
    change: str,
    base: _Values,
    cand: _Values,
    calls: Callable[[str], Sequence[Call]] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "case_id": case,
        "change": change,
        "baseline": {
            "value": base.by_case[case],
            "failure_types": base.failures[case],
            "trace_id": base.first[case],
        },
        "candidate": {
            "value": cand.by_case[case],
            "failure_types": cand.failures[case],
            "trace_id": cand.first[case],
        },
    }
    if calls is not None:
        out["trajectory"] = diff(calls(base.first[case]), calls(cand.first[case]))
    return out


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
