"""What a comparison pairs: two sides' runs of a dataset, case by case, each run's outcome under
one scorer, and each case's value on each side.

Every run asked for is counted (:mod:`agentdocket.scorers.outcomes`): a run the agent did not
answer (an error, a timeout, no response) is a **failure** for a pass/fail scorer and has no
value for a score; a case the baseline answered and the candidate answered in none of its
runs **lost its answer**. A run the judge could not judge (``judge:*``) is nobody's failure:
it leaves its case undecided on that side, and is counted. An errored run is in a scorer's
scope when the scorer judged it, or judged another run of its case: a scorer that does not
apply to a case (no reference answer) is not charged with its errors.

Cases are the unit: a side's repeats of a case are averaged (a pass/fail case's value is its
share of passing runs).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentdocket.experiments import signed_rank, stats
from agentdocket.scorers.outcomes import UNPARSEABLE, RunOutcome, outcome


@dataclass(frozen=True)
class Judged:
    """One run's latest verdict of one scorer."""

    passed: bool | None
    score: float | None
    failure_type: str | None = None


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label, its runs' trace ids by case, and the runs that
    ended in an error with their error (an agent's exception or timeout)."""

    label: str
    runs: Mapping[str, Sequence[str]]  # case id -> trace ids (repeats)
    errors: Mapping[str, str | None] = field(default_factory=dict)  # trace id -> its error


@dataclass
class CaseValues:
    """One side's cases under one scorer."""

    value: dict[str, float] = field(default_factory=dict)  # case -> pass share or mean score
    runs: dict[str, int] = field(default_factory=dict)  # case -> runs in scope
    missing: dict[str, Counter[str]] = field(default_factory=dict)  # case -> kinds
    answered: dict[str, int] = field(default_factory=dict)  # case -> runs with an answer
    valued: dict[str, int] = field(default_factory=dict)  # case -> runs its value is over
    failures: dict[str, list[str]] = field(default_factory=dict)  # case -> failure types
    first: dict[str, str] = field(default_factory=dict)  # case -> a judged run's trace id
    unjudged: int = 0  # runs with no verdict (not yet scored, or outside the scorer's reach)

    def summary(self, decides: bool) -> dict[str, Any]:
        n = len(self.value)
        total = sum(self.value.values())
        kinds: Counter[str] = Counter()
        for found in self.missing.values():
            kinds.update(found)
        runs = sum(self.runs.values())
        return {
            "n": n,
            "runs": runs,
            "passed": round(total, 6) if decides else None,
            "rate": total / n if n else None,
            "missing": sum(kinds.values()),
            "missing_kinds": dict(sorted(kinds.items())),
            "unparseable": kinds.get(UNPARSEABLE, 0),  # judge replies that never parsed
            "coverage": sum(self.answered.values()) / runs if runs else None,
            "unjudged": self.unjudged,
        }


def scope(sides: Iterable[Side], judged: Mapping[str, Judged]) -> set[str]:
    """The cases a scorer judged a run of, on any side."""
    return {
        case
        for side in sides
        for case, traces in side.runs.items()
        if any(t in judged for t in traces)
    }


def case_values(
    side: Side, judged: Mapping[str, Judged], decides: bool, cases: set[str]
) -> CaseValues:
    """The side's cases under one scorer (``decides``: pass/fail, else a score), ``cases``
    the scorer's scope."""
    out = CaseValues()
    for case, traces in side.runs.items():
        runs = answered = valued = 0
        total, first = 0.0, None
        missing: Counter[str] = Counter()
        failures: set[str] = set()
        for t in traces:
            v = judged.get(t)
            erred = t in side.errors
            if v is None and not (erred and case in cases):
                out.unjudged += 1
                continue
            got = (
                outcome(None, None, None, "error", side.errors[t])
                if v is None
                else outcome(
                    v.passed,
                    v.score,
                    v.failure_type,
                    "error" if erred else None,
                    side.errors.get(t),
                )
            )
            runs += 1
            if v is not None and v.failure_type:
                failures.add(v.failure_type)
            if got.missing is not None:
                missing[got.missing] += 1
                if got.agent_side:
                    failures.add(got.missing)
            else:
                answered += 1
            x = _value(got, decides)
            if x is not None:
                total, valued = total + x, valued + 1
                first = first or t
        if not runs:
            continue
        out.runs[case], out.answered[case] = runs, answered
        out.failures[case] = sorted(failures)
        if missing:
            out.missing[case] = missing
        if valued:
            out.value[case], out.valued[case] = total / valued, valued
            out.first[case] = first or ""
    return out


def _value(found: RunOutcome, decides: bool) -> float | None:
    """A run's value: a pass as 1 and a failure or an unanswered run as 0 (pass/fail), or its
    score; None when it has none (a judge that failed, a score scorer's unanswered run)."""
    if decides:
        if found.status == "passed":
            return 1.0
        return 0.0 if found.status == "failed" or found.agent_side else None
    return found.score


def lost_answers(base: CaseValues, cand: CaseValues) -> dict[str, list[str]]:
    """The cases the baseline answered (in some run) and the candidate did not (in any run in
    scope), with the kinds of what the candidate's runs lack."""
    lost = {}
    for case in cand.runs:
        if base.answered.get(case, 0) > 0 and cand.answered.get(case, 0) == 0:
            kinds = cand.missing.get(case, Counter())
            if any(not k.startswith("judge:") for k in kinds):
                lost[case] = sorted(kinds)
    return dict(sorted(lost.items()))


@dataclass
class Paired:
    """One scorer's two sides, paired by case: what its test is computed from."""

    name: str
    decides: bool
    base: CaseValues
    cand: CaseValues
    cases: list[str]  # paired: a value on both sides
    differences: list[float]  # candidate - baseline, per paired case
    lost: dict[str, list[str]]
    unpaired: dict[str, list[str]]  # "baseline only" / "candidate only" -> cases

    @property
    def improved(self) -> list[str]:
        return [c for c, d in zip(self.cases, self.differences, strict=True) if d > 0]

    @property
    def regressed(self) -> list[str]:
        return [c for c, d in zip(self.cases, self.differences, strict=True) if d < 0]

    @property
    def repeats(self) -> int:
        """The most runs any case has on a side (1: no repeats)."""
        return max([*self.base.runs.values(), *self.cand.runs.values(), 1])

    def p_and_floor(self) -> tuple[float, float]:
        """The test's p-value and the smallest p-value it could give (for the family's
        adjustment, before the threshold is known)."""
        if self.decides:
            b, c = len(self.improved), len(self.regressed)
            return stats.sign_test(b, c), stats.sign_test_floor(b + c)
        return signed_rank.p_value(self.differences)

    def tested(self, threshold: float) -> stats.Tested:
        """The test, its estimate and the interval at level ``1 - threshold``."""
        if self.decides:
            return stats.proportions(
                len(self.improved), len(self.regressed), len(self.cases), threshold
            )
        return signed_rank.shift(self.differences, threshold)

    @property
    def mean_difference(self) -> float | None:
        return sum(self.differences) / len(self.differences) if self.differences else None


def pair(name: str, baseline: Side, candidate: Side, judged: Mapping[str, Judged]) -> Paired:
    """One scorer's verdicts of both sides, paired by case."""
    decides = any(v.passed is not None for v in judged.values())
    cases = scope((baseline, candidate), judged)
    base = case_values(baseline, judged, decides, cases)
    cand = case_values(candidate, judged, decides, cases)
    paired = sorted(set(base.value) & set(cand.value))
    in_base, in_cand = set(baseline.runs) & cases, set(candidate.runs) & cases
    unpaired = {
        "baseline only": sorted(in_base - in_cand),
        "candidate only": sorted(in_cand - in_base),
    }
    return Paired(
        name,
        decides,
        base,
        cand,
        paired,
        [cand.value[c] - base.value[c] for c in paired],
        lost_answers(base, cand),
        {k: v for k, v in unpaired.items() if v},
    )


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
