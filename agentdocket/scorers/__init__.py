"""Offline scorers: pure functions from a stored trace (with its case) to a verdict.

Their names are a contract: ``planner.suffix_match``, ``tools.slot_fill``, ``tools.procedural``,
``response.similarity``, ``interaction.metrics``, ``answer.reference`` (an LLM judge). A scorer
does no I/O of its own; the runner around it (:mod:`agentdocket.scorers.runner`) reads traces,
batches them, calls judge models through its session and appends the verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import (
    Outcome,
    Scorer,
    get,
    latest,
    matching,
    register,
    scorers,
    shared_outcomes,
    unregister,
)
from agentdocket.scorers.grammar import METRICS as GRAMMAR_METRICS
from agentdocket.scorers.grammar import grammar_groups, grammar_groups_batch
from agentdocket.scorers.interaction import interaction_metrics
from agentdocket.scorers.judges.peer import SUBTASKS, peer_review_batch
from agentdocket.scorers.judges.points import examiner_points, examiner_points_batch
from agentdocket.scorers.judges.reference import answer_reference, answer_reference_batch
from agentdocket.scorers.similarity import response_similarity, response_similarity_batch
from agentdocket.scorers.tool_use import procedural, slot_fill, suffix_match

__all__ = [
    "Outcome",
    "Scorer",
    "get",
    "latest",
    "matching",
    "register",
    "scorers",
    "shared_outcomes",
    "unregister",
]

MINILM = {"similarity": "all-MiniLM-L6-v2"}

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
    )
)
register(
    Scorer(
        "tools.slot_fill",
        "2",  # 2 reads plan steps: a call recorded with a bare value takes its model's arguments
        "every expected call matched by a distinct executed call with equal arguments "
        "(the case's rules), in any order",
        slot_fill,
        config=MINILM,
        inputs=("plan", "tool.called", "case"),
        metrics={"matched_fraction": ("matched_fraction", "mean")},
    )
)
register(
    Scorer(
        "tools.procedural",
        "1",
        "overall procedural accuracy: planner.suffix_match and tools.slot_fill both pass",
        procedural,
        config=MINILM,
        inputs=("plan", "tool.called", "case"),
    )
)
register(
    Scorer(
        "response.similarity",
        "1",
        "final response vs the case's stub response: all-MiniLM-L6-v2 cosine, ROUGE-L P/R/F "
        "(reference = stub)",
        response_similarity,
        config=MINILM,
        inputs=("response", "case"),
        batch=response_similarity_batch,
        metrics={
            m: (m, "mean")
            for m in ("cosine", "rougeL_precision", "rougeL_recall", "rougeL_fmeasure")
        },
    )
)
register(
    Scorer(
        "interaction.metrics",
        "1",
        "plan length (words), SQL generated, valid SQL (no error, rows returned), answer length",
        interaction_metrics,
        inputs=("plan", "sql.executed", "response"),
        metrics={
            m: (m, "mean")
            for m in ("plan_length", "plan_steps", "sql_generated", "sql_valid", "answer_length")
        },
    )
)
register(
    Scorer(
        "answer.reference",
        "1",
        "LLM judge against the reference answer (Figure 7 prompts): conclusive questions "
        "Match / Not Match, interpretive ones a score of 1-5",
        answer_reference,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("response", "case"),
        batch=answer_reference_batch,
        metrics={"score_mean": ("score", "mean")},
        judge=True,
    )
)

register(
    Scorer(
        "examiner.points",
        "1",
        "weighted scoring points of an examined conversation, by eval_code or by the judge; "
        "normalized score = weight hit / total weight",
        examiner_points,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("message", "tool.called", "tool.returned", "case"),
        batch=examiner_points_batch,
        metrics={"normalized_score": ("normalized_score", "mean")},
        judge=True,
    )
)

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
        metrics=GRAMMAR_METRICS,
        scope="group",
    )
)


def _peer(subtask: str) -> Scorer:
    def batch(traces: Sequence[Trace], config: Mapping[str, Any]) -> list[Outcome | None]:
        return peer_review_batch(subtask, traces, config)

    def one(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
        return batch([trace], config)[0]

    words = subtask.replace("_", " ")
    return Scorer(
        f"review.peer.{subtask}",
        "1",
        f"peer review of {words} (Figures 8-10): R reviewers, M meta-reviewers, the "
        "majority of the meta-reviewers decides Perfect / Imperfect",
        one,
        config={
            "model": None,
            "temperature": 0.7,
            "n_reviewers": 3,
            "n_meta_reviewers": 3,
            "retries": 2,
        },
        inputs=("run.started", "plan", "sql.executed", "retrieval", "response", "case"),
        batch=batch,
        metrics={
            "reviewer_agreement": ("reviewers_unanimous", "mean"),
            "meta_reviewer_agreement": ("meta_reviewers_unanimous", "mean"),
        },
        judge=True,
    )


for _subtask in SUBTASKS:
    register(_peer(_subtask))
