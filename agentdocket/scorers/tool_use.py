"""Tool-use scorers ("coalitions-for-tool-use: Assessing Single Pretrained Model approach"): planner
suffix match, slot filling in any order, and overall procedural accuracy.

Argument comparison follows the rules attached to the dataset's cases
(:class:`~agentdocket.events.ArgumentRules`), never rules written here: ignored keys, coercions of
the expected value, text normalisation, and semantic equality by embedding cosine above a
threshold. Semantic comparison needs a ``similarity`` function in the scorer's configuration
(texts pairs -> cosines); the rule-only comparison needs nothing. The comparison itself is
:mod:`agentdocket.scorers.arguments`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from agentdocket.events import ExpectedCall, Trace
from agentdocket.scorers.arguments import Similarity, difference_matrix
from agentdocket.scorers.base import Outcome, Scorer, option, register, remembered

# A case attribute choosing how expected calls are paired with executed ones: "optimal" (the
# default: a maximum matching, independent of call order) or "in_order" (the IBM study's
# order-dependent procedure, which its published numbers depend on).
PAIRING = "slot_fill_pairing"


# --- planner.suffix_match --------------------------------------------------------------------


def plan_names(trace: Trace) -> list[str]:
    """The generated plan as step names: each step's tool, else its text."""
    return [
        step.get("tool") or step.get("text") or ""
        for e in trace.events
        if e.kind == "plan"
        for step in e.payload["steps"]
    ]


def suffix_match(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    """Passes when the generated plan equals the expected plan or ends with it."""
    case = trace.case
    if case is None or not case.expected_plan:
        return None
    expected = list(case.expected_plan)
    generated = plan_names(trace)
    details: dict[str, Any] = {"expected": expected, "generated": generated}
    if generated == expected or (
        len(generated) > len(expected) and generated[-len(expected) :] == expected
    ):
        extra = generated[: len(generated) - len(expected)]
        details.update(extra_steps=len(extra), extra=extra)
        return Outcome(passed=True, score=1.0, details=details)
    if not generated:
        return Outcome(
            passed=False,
            score=0.0,
            failure_type="planner:no_plan",
            rationale="no plan recorded",
            details=details,
        )
    return Outcome(
        passed=False,
        score=0.0,
        failure_type="planner:mismatch",
        rationale="the plan neither equals nor ends with the expected plan",
        details=details,
    )


# --- tools.slot_fill -------------------------------------------------------------------------


def similarity_function(configured: Any) -> Similarity | None:
    """The configured similarity: a function, or the name of the embedding model."""
    if configured is None or callable(configured):
        found: Similarity | None = configured
        return found
    if configured == "all-MiniLM-L6-v2":
        return _minilm()
    raise ValueError(f"unknown similarity {configured!r}; use 'all-MiniLM-L6-v2' or a function")


@cache
def _minilm() -> Similarity:
    """The embedding model's cosine, imported once (not on every trace scored)."""
    from agentdocket.scorers.embeddings import cosine_pairs

    return cosine_pairs


def _in_order(
    diffs: list[list[list[str] | None]], expected: list[ExpectedCall], case: Any
) -> list[int | None]:
    """The pairing of the IBM study, kept to reproduce its published numbers: each expected
    call in order takes the first unused executed call of its tool that matches; a candidate
    that differs only in semantically compared arguments ends that expected call's search."""
    used: set[int] = set()
    match: list[int | None] = []
    for e, row in zip(expected, diffs, strict=True):
        rules = case.rules_for(e.tool)
        semantic = set(rules.semantic) if rules is not None else set()
        found = None
        for j, d in enumerate(row):
            if d is None or j in used:
                continue
            if d == []:
                found = j
                break
            if semantic and set(d) <= semantic:
                break
        if found is not None:
            used.add(found)
        match.append(found)
    return match


def _max_matching(compatible: list[list[int]], n_right: int) -> list[int | None]:
    """A maximum bipartite matching (augmenting paths): for each left node its right node."""
    if all(len(rights) <= 1 for rights in compatible):
        # each left node has one candidate at most: no path can move a node already matched,
        # so augmenting gives each its candidate if no earlier node took it
        taken: set[int] = set()
        simple: list[int | None] = []
        for rights in compatible:
            right = rights[0] if rights and rights[0] not in taken else None
            if right is not None:
                taken.add(right)
            simple.append(right)
        return simple
    owner: list[int | None] = [None] * n_right

    def augment(left: int, seen: set[int]) -> bool:
        for right in compatible[left]:
            if right in seen:
                continue
            seen.add(right)
            holder = owner[right]
            if holder is None or augment(holder, seen):
                owner[right] = left
                return True
        return False

    for left in range(len(compatible)):
        augment(left, set())
    match: list[int | None] = [None] * len(compatible)
    for right, holder in enumerate(owner):
        if holder is not None:
            match[holder] = right
    return match


def slot_fill(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    """Every expected call is matched by a distinct executed call with equal arguments (under
    the case's rules), in any order; found by a maximum matching, not greedily."""
    case = trace.case
    if case is None:
        return None
    expected = list(case.expected_calls)
    calls = trace.call_arguments()
    similarity = similarity_function(config.get("similarity"))
    diffs = difference_matrix(expected, calls, case, similarity)
    pairing = case.attributes.get(PAIRING, "optimal")
    if pairing == "in_order":
        match = _in_order(diffs, expected, case)
    elif pairing == "optimal":
        match = _max_matching(
            [[j for j, d in enumerate(row) if d == []] for row in diffs], len(calls)
        )
    else:
        raise ValueError(f"case {case.case_id}: unknown {PAIRING} {pairing!r}")
    missing = [i for i, m in enumerate(match) if m is None]
    details: dict[str, Any] = {
        "pairing": pairing,
        "expected_calls": len(expected),
        "executed_calls": len(calls),
        "matched": {str(i): calls[m].call_id for i, m in enumerate(match) if m is not None},
        "matched_fraction": (len(expected) - len(missing)) / len(expected) if expected else 1.0,
    }
    if not missing:
        return Outcome(passed=True, score=1.0, details=details)
    unmatched = []
    for i in missing:
        candidates = [d for d in diffs[i] if d is not None]
        unmatched.append(
            {
                "tool": expected[i].tool,
                "arguments": expected[i].arguments,
                "closest_differences": min(candidates, key=len) if candidates else None,
            }
        )
    details["unmatched"] = unmatched
    # fewer calls of a tool than expected: a call is missing; else some arguments are wrong
    short = any(
        sum(c.tool == expected[i].tool for c in calls)
        < sum(e.tool == expected[i].tool for e in expected)
        for i in missing
    )
    failure = "slot_fill:missing_call" if short else "slot_fill:wrong_argument"
    return Outcome(
        passed=False,
        score=(len(expected) - len(missing)) / len(expected),
        failure_type=failure,
        rationale=f"{len(missing)} of {len(expected)} expected calls not matched",
        details=details,
    )


# --- tools.procedural ------------------------------------------------------------------------


def procedural(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    """Overall procedural accuracy: the planner and slot filling both pass."""
    plan = remembered(suffix_match, trace, config)
    slots = remembered(slot_fill, trace, config)
    if plan is None or slots is None:
        return None
    passed = bool(plan.passed and slots.passed)
    failure = None if passed else (plan.failure_type or slots.failure_type)
    return Outcome(
        passed=passed,
        score=1.0 if passed else 0.0,
        failure_type=failure,
        details={"planner_passed": plan.passed, "slot_fill_passed": slots.passed},
    )


# --- declarations ---------------------------------------------------------------------------

SIMILARITY = option(
    (str,),
    "all-MiniLM-L6-v2",
    "the embedding model for cosine similarity, or a function from text pairs to scores",
    choices=("all-MiniLM-L6-v2",),
)

register(
    Scorer(
        "planner.suffix_match",
        "1",
        "the generated plan equals the expected plan or ends with it; details: extra steps",
        suffix_match,
        inputs=("plan", "case"),
        metrics={
            "extra_steps_total": ("extra_steps", "sum"),
            "extra_steps_mean": ("extra_steps", "mean"),
        },
        details={
            "expected": "list[str]: the expected plan's tools",
            "generated": "list[str]: the run's plan's tools",
            "extra_steps": "int: steps before the expected suffix (a passing plan)",
            "extra": "list[str]: those steps' tools",
        },
    )
)
register(
    Scorer(
        "tools.slot_fill",
        "2",  # 2 reads plan steps: a call recorded with a bare value takes its model's arguments
        "every expected call matched by a distinct executed call with equal arguments "
        "(the case's rules), in any order",
        slot_fill,
        config={"similarity": "all-MiniLM-L6-v2"},
        inputs=("plan", "tool.called", "case"),
        metrics={"matched_fraction": ("matched_fraction", "mean")},
        options={"similarity": SIMILARITY},
        details={
            "pairing": "str: 'optimal' (a maximum matching) or 'in_order' (the case's choice)",
            "expected_calls": "int: calls the case expects",
            "executed_calls": "int: calls the run made",
            "matched": "dict[str, str]: expected call index -> the executed call's id",
            "matched_fraction": "float: expected calls matched",
            "unmatched": "list[dict]: each unmatched expected call, with its closest differences",
        },
    )
)
register(
    Scorer(
        "tools.procedural",
        "1",
        "overall procedural accuracy: planner.suffix_match and tools.slot_fill both pass",
        procedural,
        config={"similarity": "all-MiniLM-L6-v2"},
        inputs=("plan", "tool.called", "case"),
        options={"similarity": SIMILARITY},
        details={
            "planner_passed": "bool: planner.suffix_match passed",
            "slot_fill_passed": "bool: tools.slot_fill passed",
        },
    )
)
