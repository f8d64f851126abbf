"""``review.peer.*``: reference-free peer review of the three sub-tasks of database QA ("On
Evaluating the Integration of Reasoning and Action in LLM Agents with Database Question Answering",
Figures 8-10): interaction planning, tool employment, information synthesis.

For each run and sub-task, R reviewers (default 3) judge the agent's work with the review
prompt; M meta-reviewers (default 3) read the reviews with the meta-review prompt; every one
answers ``Final Decision: Perfect`` or ``Imperfect``, at temperature 0.7 by default. The verdict
is the majority of the meta-reviewers (a tie, possible only with an even M, is Imperfect: a
perfect verdict needs a majority for it). Reviews whose decision cannot be parsed (after the
retries) are left out of the meta-review; a sub-task with no parseable review, or no parseable
meta-review, is ``judge:unparseable``. Details carry every decision and the agreement
(unanimity) of reviewers and of meta-reviewers, which reports average into agreement rates.

Reviewers may be different models (a jury): ``config["reviewers"]`` and
``config["meta_reviewers"]`` take a list of models, used in turn; ``config["model"]`` is the
default for both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer, option, register
from agentdocket.scorers.judges.client import (
    JUDGE_OPTIONS,
    Answer,
    Ask,
    current_session,
    judge_trace_id,
    linked_trace,
    resolve_model,
)
from agentdocket.scorers.judges.parse import parse_final_decision
from agentdocket.scorers.judges.prompts import render

SUBTASKS = {
    "interaction_planning": "IP",
    "tool_employment": "TE",
    "information_synthesis": "IS",
}


def _plan_text(trace: Trace) -> str:
    texts = [e.payload.get("text") for e in trace.of_kind("plan")]
    if any(texts):
        return "\n".join(t for t in texts if t)
    return "\n".join(
        f"{i}. {step.text or step.tool}" for i, step in enumerate(trace.plan(), start=1)
    )


def _sql_text(trace: Trace) -> str:
    parts = []
    for i, q in enumerate(trace.sql(), start=1):
        if q.error is not None:
            outcome = f"Error: {q.error}"
        else:
            rows = "; ".join(", ".join(map(str, row)) for row in q.rows[:20])
            outcome = f"Columns: {', '.join(q.columns)}\nRows: {rows or '(none)'}"
        parts.append(f"Query {i}: {q.query}\n{outcome}")
    return "\n\n".join(parts) or "(no SQL queries)"


def _database_text(trace: Trace) -> str:
    case = trace.case
    if case is not None and isinstance(case.attributes.get("database_text"), str):
        return str(case.attributes["database_text"])
    documents = [
        doc.get("text") or doc.get("id")
        for e in trace.of_kind("retrieval")
        for doc in e.payload.get("documents", [])
    ]
    return "\n".join(str(d) for d in documents if d) or "(not recorded)"


def _values(trace: Trace, subtask: str) -> dict[str, str]:
    question = (trace.case.question if trace.case else None) or trace.question
    values = {
        "question": question or "",
        "database_text": _database_text(trace),
        "plan": _plan_text(trace),
    }
    if subtask != "interaction_planning":
        values["sql_results"] = _sql_text(trace)
    if subtask == "information_synthesis":
        values["answer"] = trace.response or ""
    return values


def _models(config: Mapping[str, Any], key: str) -> list[tuple[Any, str]]:
    given = config.get(key) or [config.get("model")]
    return [resolve_model(m) for m in (given if isinstance(given, list) else [given])]


def _reviews_text(decisions: Sequence[Answer]) -> str:
    return "\n\n".join(
        f"Reviewer {n}:\n{a.reply}" for n, a in enumerate(decisions, start=1) if a.reply
    )


def _unanimous(decisions: Sequence[str]) -> bool:
    return len(set(decisions)) <= 1


def peer_review_batch(
    subtask: str, traces: Sequence[Trace], config: Mapping[str, Any]
) -> list[Outcome | None]:
    """Outcomes of one sub-task's peer review for a batch of runs."""
    n_reviewers = int(config.get("n_reviewers", 3))
    n_meta = int(config.get("n_meta_reviewers", 3))
    temperature = config.get("temperature", 0.7)
    retries = int(config.get("retries", 2))
    reviewers, metas = _models(config, "reviewers"), _models(config, "meta_reviewers")
    session = current_session()
    name = f"review.peer.{subtask}"
    judged = [i for i, t in enumerate(traces) if t.case is not None or t.started is not None]
    values = {i: _values(traces[i], subtask) for i in judged}
    tids = {i: judge_trace_id(traces[i].trace_id, name, config) for i in judged}

    def ask_all(
        prompts: dict[int, str], models: list[tuple[Any, str]], role: str, count: int
    ) -> dict[int, list[Answer]]:
        """For each run: ``count`` answers, sample k asked of model k mod len(models)."""
        out: dict[int, list[Answer]] = {i: [Answer() for _ in range(count)] for i in prompts}
        for m, (model, model_name) in enumerate(models):
            samples = [k for k in range(count) if k % len(models) == m]
            asks = [
                (i, k, Ask(tids[i], prompts[i], parse_final_decision, sample=k, role=role))
                for i in prompts
                for k in samples
            ]
            answers = session.ask(
                model,
                model_name,
                temperature,
                [a for _, _, a in asks],
                retries=retries,
                max_concurrency=config.get("max_concurrency"),
            )
            for (i, k, _), answer in zip(asks, answers, strict=True):
                out[i][k] = answer
        return out

    review_prompts = {i: render(f"review_{subtask}", **values[i]) for i in judged}
    reviews = ask_all(review_prompts, reviewers, "reviewer", n_reviewers)
    key = f"{SUBTASKS[subtask]}_reviews"
    meta_prompts = {
        i: render(f"meta_review_{subtask}", **values[i], **{key: _reviews_text(parsed)})
        for i in judged
        if (parsed := [a for a in reviews[i] if a.failure is None])
    }
    metas_answers = ask_all(meta_prompts, metas, "meta_reviewer", n_meta)
    models = (
        [reviewers[k % len(reviewers)][1] for k in range(n_reviewers)],
        [metas[k % len(metas)][1] for k in range(n_meta)],
    )
    out: list[Outcome | None] = [None] * len(traces)
    for i in judged:
        mine = metas_answers.get(i, [])
        judge_trace = linked_trace(tids[i], reviews[i] + mine)
        out[i] = _outcome(subtask, reviews[i], mine, models, temperature, judge_trace)
    return out


def _outcome(
    subtask: str,
    reviews: list[Answer],
    metas: list[Answer],
    models: tuple[list[str], list[str]],
    temperature: Any,
    judge_trace: str,
) -> Outcome:
    """One run's outcome: the majority of its meta-reviews that parsed decides."""
    review_decisions = [a.parsed for a in reviews if a.failure is None]
    meta_decisions = [a.parsed for a in metas if a.failure is None]
    details: dict[str, Any] = {
        "subtask": subtask,
        "reviewer_decisions": [a.parsed for a in reviews],
        "meta_reviewer_decisions": [a.parsed for a in metas],
        "reviewer_models": models[0],
        "meta_reviewer_models": models[1],
        "temperature": temperature,
    }
    if not review_decisions or not meta_decisions:
        failed = [a for a in reviews + metas if a.failure]
        return Outcome(
            failure_type=failed[0].failure if failed else "judge:unparseable",
            rationale=failed[0].error if failed else None,
            details=details,
            judge_trace_id=judge_trace,
        )
    perfect = sum(d == "Perfect" for d in meta_decisions)
    passed = perfect * 2 > len(meta_decisions)
    details["reviewers_unanimous"] = _unanimous(review_decisions)
    details["meta_reviewers_unanimous"] = _unanimous(meta_decisions)
    details["perfect_meta_reviews"] = perfect
    return Outcome(
        passed=passed,
        score=perfect / len(meta_decisions),
        label="Perfect" if passed else "Imperfect",
        failure_type=None if passed else f"review:imperfect_{SUBTASKS[subtask].lower()}",
        details=details,
        judge_trace_id=judge_trace,
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
        inputs=("run.started", "question", "plan", "sql.executed", "retrieval", "answer", "case"),
        batch=batch,
        metrics={
            "reviewer_agreement": ("reviewers_unanimous", "mean"),
            "meta_reviewer_agreement": ("meta_reviewers_unanimous", "mean"),
        },
        judge=True,
        options={
            **JUDGE_OPTIONS,
            "temperature": option((float, int), 0.7, "sampling temperature (the study: 0.7)"),
            "n_reviewers": option(int, 3, "reviewers per run (R)"),
            "n_meta_reviewers": option(int, 3, "meta-reviewers per run (M)"),
            "reviewers": option(list, None, "a jury: reviewer models used in turn"),
            "meta_reviewers": option(list, None, "a jury: meta-reviewer models used in turn"),
        },
        details={
            "subtask": "str: interaction_planning, tool_employment or information_synthesis",
            "reviewer_decisions": "list[str]: each reviewer's Perfect / Imperfect",
            "meta_reviewer_decisions": "list[str]: each meta-reviewer's decision",
            "reviewer_models": "list[str]: the reviewers' models, in order",
            "meta_reviewer_models": "list[str]: the meta-reviewers' models, in order",
            "temperature": "float: the calls' temperature",
            "reviewers_unanimous": "bool: the reviewers agreed",
            "meta_reviewers_unanimous": "bool: the meta-reviewers agreed",
            "perfect_meta_reviews": "int: meta-reviews deciding Perfect",
        },
    )


for _subtask in SUBTASKS:
    register(_peer(_subtask))
