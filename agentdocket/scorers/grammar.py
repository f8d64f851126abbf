"""``grammar.groups`` ("GRAMMAR: Grounded and Modular Methodology for Assessment of Closed-Domain
Retrieval-Augmented Language Models", GRAMMAR-Eval): each run judged among the runs of its semantic
group (the case's ``group``), with context comparison.

- A run is correct when its answer judge's verdict is Correct (the verdict of the scorer named
  by ``config["judge"]``, e.g. the judgement imported with GRAMMAR's results); in closed-domain
  mode (the default) a run whose retrieved document ids differ, as a set, from its case's true
  ids is incorrect whatever the judge said. Retrieval is correct when the two sets are equal.
- A group is Gap (no correct run), Robust (all correct) or Non-robust (some of each).
- Context comparison: an incorrect run of a non-robust group had sufficient context when its
  retrieved ids equal those of a correctly answered run of its group: blame the language model;
  otherwise blame retrieval.

Per-run details feed the report's metrics (names are a contract): ``accuracy``,
``retrieval_accuracy``, ``knowledge_accuracy`` (groups with a correct run / groups),
``refined_accuracy`` and ``refined_retrieval_accuracy`` (runs of non-gap groups only), the counts
``gap``, ``robust``, ``non_robust``, ``runs_per_group`` and the blame counts. Group-level values
sit on one representative run per group, so that sums count groups exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer, option, register

METRICS = {
    "accuracy": ("correct", "mean"),
    "retrieval_accuracy": ("retrieval_correct", "mean"),
    "knowledge_accuracy": ("group_has_correct", "ratio:group_representative"),
    "refined_accuracy": ("refined_correct", "mean"),
    "refined_retrieval_accuracy": ("refined_retrieval_correct", "mean"),
    "gap": ("gap", "sum"),
    "robust": ("robust", "sum"),
    "non_robust": ("non_robust", "sum"),
    "runs_per_group": ("group_size", "mean"),
    "blame_retrieval": ("blame_retrieval", "sum"),
    "blame_language_model": ("blame_language_model", "sum"),
}


def _judged_correct(trace: Trace, judge: str) -> bool:
    found = [e.payload for e in trace.of_kind("verdict") if e.payload.get("scorer") == judge]
    if not found:
        return False
    last = found[-1]
    if last.get("passed") is not None:
        return bool(last["passed"])
    return str(last.get("label") or "").casefold() == "correct"


def _retrieved(trace: Trace) -> frozenset[str]:
    return frozenset(
        str(doc["id"]) for e in trace.of_kind("retrieval") for doc in e.payload.get("documents", [])
    )


def grammar_groups_batch(
    traces: Sequence[Trace], config: Mapping[str, Any]
) -> list[Outcome | None]:
    judge = str(config.get("judge", "grammar.judge"))
    closed = bool(config.get("closed_domain", True))
    groups: dict[str, list[int]] = defaultdict(list)
    for i, trace in enumerate(traces):
        if trace.case is not None and trace.case.group is not None:
            groups[trace.case.group].append(i)
    out: list[Outcome | None] = [None] * len(traces)
    for group, members in groups.items():
        runs = []
        for i in members:
            trace = traces[i]
            assert trace.case is not None
            retrieved = _retrieved(trace)
            retrieval_ok = retrieved == frozenset(trace.case.true_document_ids)
            correct = _judged_correct(trace, judge) and (retrieval_ok or not closed)
            runs.append((i, retrieved, retrieval_ok, correct))
        n_correct = sum(1 for *_, c in runs if c)
        tag = "Gap" if n_correct == 0 else "Robust" if n_correct == len(runs) else "Non-robust"
        sufficient = {retrieved for _, retrieved, _, c in runs if c}
        representative = min(members, key=lambda i: traces[i].trace_id)
        for i, retrieved, retrieval_ok, correct in runs:
            details: dict[str, Any] = {
                "group": group,
                "tag": tag,
                "correct": correct,
                "retrieval_correct": retrieval_ok,
                "retrieved_ids": sorted(retrieved),
            }
            if tag != "Gap":
                details["refined_correct"] = correct
                details["refined_retrieval_correct"] = retrieval_ok
            blame = None
            if tag == "Non-robust" and not correct:
                blame = "language_model" if retrieved in sufficient else "retrieval"
                details["blame"] = blame
                details[f"blame_{blame}"] = 1
            if i == representative:
                details.update(
                    group_representative=1,
                    group_has_correct=int(n_correct > 0),
                    group_size=len(runs),
                    gap=int(tag == "Gap"),
                    robust=int(tag == "Robust"),
                    non_robust=int(tag == "Non-robust"),
                )
            failure = None
            if not correct:
                failure = "grammar:gap" if tag == "Gap" else f"grammar:{blame}"
            out[i] = Outcome(
                passed=correct,
                score=1.0 if correct else 0.0,
                label=tag,
                failure_type=failure,
                details=details,
            )
    return out


def grammar_groups(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    return grammar_groups_batch([trace], config)[0]


# --- hypothesis testing across two conditions --------------------------------------------------


def compare_conditions(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Two conditions over the same semantic groups (e.g. short vs long query forms), from the
    ``grammar.groups`` details of their runs: the groups that are gaps in both (mutual gaps:
    knowledge missing whatever the phrasing), in one only, and the accuracy difference A - B
    over the common groups with a paired bootstrap interval (groups resampled together)."""
    import random

    def by_group(details: Sequence[Mapping[str, Any]]) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = defaultdict(list)
        for d in details:
            out[str(d["group"])].append(bool(d["correct"]))
        return out

    ga, gb = by_group(a), by_group(b)
    common = sorted(ga.keys() & gb.keys())
    if not common:
        raise ValueError("the two conditions share no semantic group")
    gap_a = {g for g in common if not any(ga[g])}
    gap_b = {g for g in common if not any(gb[g])}

    def accuracy(groups: Sequence[str], runs: dict[str, list[bool]]) -> float:
        values = [c for g in groups for c in runs[g]]
        return sum(values) / len(values)

    rng = random.Random(seed)
    draws = []
    for _ in range(samples):
        picked = rng.choices(common, k=len(common))
        draws.append(accuracy(picked, ga) - accuracy(picked, gb))
    draws.sort()
    tail = (1 - level) / 2
    interval = (
        (draws[int(tail * (len(draws) - 1))], draws[int((1 - tail) * (len(draws) - 1) + 0.5)])
        if draws
        else None
    )
    acc_a, acc_b = accuracy(common, ga), accuracy(common, gb)
    return {
        "groups": len(common),
        "mutual_gap": len(gap_a & gap_b),
        "gap_only_a": len(gap_a - gap_b),
        "gap_only_b": len(gap_b - gap_a),
        "accuracy_a": acc_a,
        "accuracy_b": acc_b,
        "difference": acc_a - acc_b,
        "interval": interval,
        "level": level,
        "samples": samples,
    }


register(
    Scorer(
        "grammar.groups",
        "1",
        "GRAMMAR-Eval: runs judged within their semantic group (Gap / Robust / Non-robust), "
        "closed-domain correctness, context comparison (retrieval vs language model)",
        grammar_groups,
        config={"judge": "grammar.judge", "closed_domain": True},
        inputs=("retrieval", "verdict", "case"),
        batch=grammar_groups_batch,
        metrics=METRICS,
        scope="group",
        options={
            "judge": option(str, "grammar.judge", "the scorer whose verdict says Correct"),
            "closed_domain": option(
                bool, True, "a correct run must also retrieve exactly the true documents"
            ),
        },
        details={
            "group": "str: the semantic group (the case's group)",
            "tag": "str: the group's tag, Gap, Robust or Non-robust",
            "correct": "bool: the run is correct",
            "retrieval_correct": "bool: it retrieved exactly the true documents",
            "retrieved_ids": "list[str]: the documents it retrieved",
            "refined_correct": "bool: correct, outside gap groups",
            "refined_retrieval_correct": "bool: retrieval correct, outside gap groups",
            "blame": "str: 'retrieval' or 'language_model' (an incorrect non-robust run)",
            "blame_retrieval": "int: 1 when blamed on retrieval",
            "blame_language_model": "int: 1 when blamed on the language model",
            "group_representative": "int: 1 on one run per group (group-level counts)",
            "group_has_correct": "int: the group has a correct run (on the representative)",
            "group_size": "int: runs in the group (on the representative)",
            "gap": "int: 1 for a gap group (on the representative)",
            "robust": "int: 1 for a robust group (on the representative)",
            "non_robust": "int: 1 for a non-robust group (on the representative)",
        },
    )
)
