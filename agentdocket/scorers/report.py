"""Reports: verdicts aggregated per scorer version, over a dataset's runs, optionally by group.

The JSON shape is a contract::

    {"dataset": str, "runs": int, "errored": int,
     "scorers": {NAME: {"version": str, "scored": int, "passed": int|null, "failed": int|null,
                        "missing": int, "missing_kinds": {KIND: count}, "unparseable": int,
                        "unjudged": int,
                        "pass_rate": float|null, "pass_rate_answered": float|null,
                        "coverage": float|null, "score_mean": float|null,
                        "metrics": {METRIC: value}, "failure_types": {TYPE: count},
                        "repeats": {...}}}}

With ``by``, the same object also carries ``"by": FIELD`` and ``"groups": {VALUE: {"runs",
"errored", "scorers"}}``.

Every run a scorer was asked to judge counts (:mod:`.outcomes`): ``scored`` is how many, each
``passed``, ``failed`` or ``missing`` (no answer, an agent's error or timeout, a judge that
failed; ``missing_kinds`` says which, and ``unparseable`` how many of them are a judge's replies
that never stated a verdict in its format, retries included), so ``pass_rate`` is over all of
them and ``pass_rate_answered`` over the answered ones (the IBM study's rate: it left errored
tests out). An errored run counts for a scorer that judged it or another run of its case; a run
with no verdict otherwise is ``unjudged`` (not scored yet, or outside the scorer's reach).
``coverage`` is the share of judged runs with an answer, beside ``score_mean`` and the
metrics, which average the answered runs. ``repeats`` (when a case ran more than once by one
agent configuration:
pass@1 with a case-clustered interval, pass@k, pass^k, flaky cases, the variance split;
:mod:`.repeats`). Only the latest verdict per run of the chosen version counts. Pure
functions of the rows the store gives (:class:`~agentdocket.store.reading.ReportRun`,
``ReportVerdict``). Session scorers (``session.*``) are reported over sessions: ``scored``
counts conversations, each by the verdict on its last turn.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentdocket.errors import AgentdocketError
from agentdocket.scorers import repeats
from agentdocket.scorers.base import Metric, get, version_key
from agentdocket.scorers.outcomes import UNPARSEABLE, RunOutcome, outcome
from agentdocket.store.scoring_reads import ReportRun, ReportVerdict

GROUPINGS = ("agent", "version", "strategy", "model")


class ReportError(AgentdocketError, ValueError):
    """A report cannot be made as asked (unknown version, nothing scored)."""


def choose_versions(stored: Mapping[str, Sequence[str]], asked: Sequence[str]) -> dict[str, str]:
    """Which version of each stored scorer to report: the newest, unless ``asked`` says
    otherwise (``"2"``: version 2 of every scorer that has one; ``"NAME=2"``: of that one)."""
    chosen = {name: max(versions, key=version_key) for name, versions in stored.items()}
    for item in asked:
        # NAME=V at the first "=": a version may hold one (1+closed_domain=false)
        name, _, version = item.partition("=") if "=" in item else ("", "", item)
        if name:
            if name not in stored:
                known = ", ".join(sorted(stored)) or "none"
                raise ReportError(f"--version {item}: no verdicts of {name!r} (scored: {known})")
            if version not in stored[name]:
                raise ReportError(
                    f"--version {item}: {name} has verdicts of versions "
                    f"{', '.join(sorted(stored[name], key=version_key))} only"
                )
            chosen[name] = version
            continue
        having = [n for n, versions in stored.items() if version in versions]
        if not having:
            raise ReportError(f"--version {version}: no scorer has verdicts of that version")
        for n in having:
            chosen[n] = version
    return chosen


def metric_specs(
    scorer: str, version: str, details: Iterable[Mapping[str, Any]]
) -> dict[str, Metric]:
    """The metrics a scorer version declares (for a version not registered here, those of the
    newest registered version of the same name); else the mean of every numeric detail."""
    declared: dict[str, Metric] = {}
    for wanted in (version, None):
        try:
            declared = dict(get(scorer, wanted).metrics)
            break
        except KeyError:
            continue
    if declared:
        return declared
    keys = sorted({k for d in details for k, v in d.items() if _number(v)})
    return {k: (k, "mean") for k in keys}


def _number(value: Any) -> bool:
    """A value a metric can average: a finite number, or a boolean (as 0 / 1: a rate)."""
    return isinstance(value, int | float) and math.isfinite(value)


def group_value(run: ReportRun, by: str) -> str:
    if by == "agent":
        return run.agent or "-"
    if by == "version":
        return run.agent_version or "-"
    if by == "strategy":
        return run.strategy or "-"
    models = sorted(set(run.models.values()))
    if len(models) <= 1:
        return models[0] if models else "-"
    return ", ".join(f"{role}={m}" for role, m in sorted(run.models.items()))


def _scorer_summary(
    verdicts: Sequence[ReportVerdict],
    metrics: Mapping[str, Metric],
    runs: Sequence[ReportRun],
    judged_cases: set[str],
) -> dict[str, Any]:
    """One scorer version over a section's ``runs``: every run it judged, and every errored
    run of a case it judged, has an outcome (:mod:`.outcomes`); the others are unjudged."""
    by_run = {v.trace_id: v for v in verdicts}
    outcomes: list[tuple[ReportRun, RunOutcome]] = []
    unjudged = 0
    for run in runs:
        v = by_run.get(run.trace_id)
        if v is None and not (run.status == "error" and run.case_id in judged_cases):
            unjudged += 1
            continue
        outcomes.append(
            (
                run,
                outcome(
                    v.passed if v else None,
                    v.score if v else None,
                    v.failure_type if v else None,
                    run.status,
                    run.error,
                ),
            )
        )
    count = Counter(o.status for _, o in outcomes)
    missing = Counter(o.missing for _, o in outcomes if o.missing is not None)
    passed, failed = count["passed"], count["failed"]
    decided = passed + failed
    judged = len(outcomes)
    answered = judged - count["missing"]
    answered_verdicts = [
        by_run[r.trace_id] for r, o in outcomes if o.status != "missing" and r.trace_id in by_run
    ]
    values: dict[str, Any] = {}
    for name, (key, how) in metrics.items():
        found = [v.details[key] for v in answered_verdicts if _number(v.details.get(key))]
        if how == "sum":
            values[name] = sum(found)
        elif how.startswith("ratio:"):
            other = how.removeprefix("ratio:")
            below = sum(
                v.details[other] for v in answered_verdicts if _number(v.details.get(other))
            )
            values[name] = sum(found) / below if below else None
        else:
            values[name] = sum(found) / len(found) if found else None
    failures = Counter(v.failure_type for v in answered_verdicts if v.failure_type)
    scores = [o.score for _, o in outcomes if o.score is not None]
    pass_fail = decided > 0
    summary: dict[str, Any] = {
        "version": verdicts[0].scorer_version if verdicts else None,
        "scored": judged,
        "passed": passed if pass_fail else None,
        "failed": failed if pass_fail else None,
        "missing": count["missing"],
        "missing_kinds": dict(sorted(missing.items())),
        "unparseable": missing.get(UNPARSEABLE, 0),
        "unjudged": unjudged,
        "pass_rate": passed / (decided + count["missing"]) if pass_fail else None,
        "pass_rate_answered": passed / decided if pass_fail else None,
        "coverage": answered / judged if judged else None,
        "score_mean": sum(scores) / len(scores) if scores else None,
        "metrics": values,
        "failure_types": dict(sorted(failures.items())),
    }
    repeated = _repeats(outcomes, pass_fail)
    if repeated:
        summary["repeats"] = repeated
    juries = _judge_models([v for v in verdicts if v.trace_id in {r.trace_id for r, _ in outcomes}])
    if juries:
        summary["judge_models"] = juries
    return summary


def _repeats(outcomes: Sequence[tuple[ReportRun, RunOutcome]], pass_fail: bool) -> dict[str, Any]:
    """pass@1, pass@k, pass^k, flaky cases and the variance split, when some case was run
    more than once by one agent configuration (:mod:`.repeats`); empty otherwise, and empty
    when a case's runs are of several configurations (agent, version, strategy, experiment):
    those are not repeats of one agent, and ``--by`` or ``--experiment`` tells them apart."""
    by_case: dict[str, list[RunOutcome]] = defaultdict(list)
    configurations: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for run, o in outcomes:
        if run.case_id is not None:
            by_case[run.case_id].append(o)
            configurations[run.case_id].add(_configuration(run))
    if not by_case or max(len(v) for v in by_case.values()) < 2:
        return {}
    if any(len(c) > 1 for c in configurations.values()):
        return {}
    if pass_fail:
        tallies = {
            case: repeats.Tally(
                sum(1 for o in found if o.status in ("passed", "failed") or o.agent_side),
                sum(1 for o in found if o.status == "passed"),
            )
            for case, found in by_case.items()
        }
        return repeats.summary(tallies)
    return repeats.score_summary(
        {case: [o.score for o in found if o.score is not None] for case, found in by_case.items()}
    )


def _configuration(run: ReportRun) -> tuple[Any, ...]:
    """What makes two runs of a case repeats of one agent: the same agent, version, strategy
    and experiment."""
    experiment = (run.attributes or {}).get("experiment")
    return (run.agent, run.agent_version, run.strategy, str(experiment))


def _judge_models(verdicts: Sequence[ReportVerdict]) -> dict[str, dict[str, Any]]:
    """For panels of judges (peer review): per role and model, how many decisions it gave,
    the share that were Perfect, and the share that agreed with the panel's final verdict."""
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for v in verdicts:
        for role in ("reviewer", "meta_reviewer"):
            models = v.details.get(f"{role}_models")
            decisions = v.details.get(f"{role}_decisions")
            if not isinstance(models, list) or not isinstance(decisions, list):
                continue
            for model, decision in zip(models, decisions, strict=False):
                if decision is None:
                    continue
                counts = tally[(role, str(model))]
                counts[0] += 1
                counts[1] += decision == "Perfect"
                counts[2] += decision == v.label
    out: dict[str, dict[str, Any]] = {}
    for (role, model), (n, perfect, agree) in sorted(tally.items()):
        out.setdefault(role, {})[model] = {
            "decisions": n,
            "perfect_rate": perfect / n,
            "agrees_with_verdict": agree / n,
        }
    return out


def _section(
    runs: Sequence[ReportRun],
    verdicts: Mapping[tuple[str, str], list[ReportVerdict]],
    specs: Mapping[tuple[str, str], Mapping[str, Metric]],
    judged_cases: Mapping[tuple[str, str], set[str]],
    last_turns: set[str] | None = None,
) -> dict[str, Any]:
    ids = {r.trace_id for r in runs}
    # a session scorer's unit is a session, as its last turn (an earlier turn's verdict was
    # given before a later turn arrived: superseded)
    sessions = [r for r in runs if r.trace_id in (last_turns or set())]
    scorers: dict[str, Any] = {}
    for (scorer, version), found in sorted(verdicts.items()):
        population = sessions if scorer.startswith("session.") else runs
        within = ids if population is runs else {r.trace_id for r in sessions}
        mine = [v for v in found if v.trace_id in within]
        summary = _scorer_summary(
            mine, specs[(scorer, version)], population, judged_cases[(scorer, version)]
        )
        summary["version"] = version
        scorers[scorer] = summary
    return {
        "runs": len(runs),
        "errored": sum(1 for r in runs if r.status == "error"),
        "scorers": scorers,
    }


def build_report(
    dataset: str | None,
    runs: Sequence[ReportRun],
    verdicts: Sequence[ReportVerdict],
    by: str | None = None,
    *,
    last_turns: set[str] | None = None,
) -> dict[str, Any]:
    """The report object (see the module's docstring for its shape). ``last_turns``: the
    last turn of each session among ``runs``, where session scorers (``session.*``) keep
    their verdicts: those scorers are reported over sessions, one each."""
    if by is not None and by not in GROUPINGS:
        raise ReportError(f"--by {by}: choose one of {', '.join(GROUPINGS)}")
    grouped: dict[tuple[str, str], list[ReportVerdict]] = defaultdict(list)
    for v in verdicts:
        grouped[(v.scorer, v.scorer_version)].append(v)
    specs = {key: metric_specs(*key, (v.details for v in found)) for key, found in grouped.items()}
    case_of = {r.trace_id: r.case_id for r in runs}
    judged_cases = {
        key: {c for v in found if (c := case_of.get(v.trace_id)) is not None}
        for key, found in grouped.items()
    }
    report: dict[str, Any] = {"dataset": dataset if dataset is not None else "(all)"}
    report.update(_section(runs, grouped, specs, judged_cases, last_turns))
    if by is not None:
        members: dict[str, list[ReportRun]] = defaultdict(list)
        for run in runs:
            members[group_value(run, by)].append(run)
        report["by"] = by
        report["groups"] = {}
        for value, group_runs in sorted(members.items()):
            ids = {r.trace_id for r in group_runs}
            part = {key: [v for v in found if v.trace_id in ids] for key, found in grouped.items()}
            report["groups"][value] = _section(group_runs, part, specs, judged_cases, last_turns)
    return report


# --- rendering --------------------------------------------------------------------------------


def rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One flat row per (group, scorer): for CSV and tables."""
    sections: list[tuple[str, Mapping[str, Any]]] = [("(all)", report)]
    if "groups" in report:
        sections += list(report["groups"].items())
    out = []
    for group, section in sections:
        for name, s in section["scorers"].items():
            row: dict[str, Any] = {
                "group": group,
                "runs": section["runs"],
                "errored": section["errored"],
                "scorer": name,
                "version": s["version"],
                "scored": s["scored"],
                "passed": s["passed"],
                "failed": s["failed"],
                "pass_rate": s["pass_rate"],
                "missing": s["missing"],
                "pass_rate_answered": s["pass_rate_answered"],
                "coverage": s["coverage"],
                "score_mean": s["score_mean"],
            }
            found = s.get("repeats", {})
            if "pass_at_1" in found:
                row["pass_at_1"] = found["pass_at_1"]["estimate"]
                top = max(found["pass_at_k"], key=int)
                row[f"pass_at_{top}"] = found["pass_at_k"][top]
                row[f"pass_hat_{top}"] = found["pass_hat_k"][top]
                row["flaky_cases"] = len(found["flaky_cases"])
            row.update(s["metrics"])
            out.append(row)
    return out


def to_csv(report: Mapping[str, Any]) -> str:
    flat = rows(report)
    columns: list[str] = []
    for row in flat:
        columns += [c for c in row if c not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    for row in flat:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()


def format_number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if not value.is_integer() or abs(value) < 1 else f"{value:.1f}"
    return str(value)
