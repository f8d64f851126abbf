"""``answer.reference``: the final response against the case's reference answer, judged by an LLM
with the prompts of Figure 7 of "On Evaluating the Integration of Reasoning and Action in LLM Agents
with Database Question Answering". Conclusive questions get Match / Not Match (passed = Match),
interpretive ones a score of 1-5."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Trace
from agentdocket.scorers.base import Outcome, Scorer, register
from agentdocket.scorers.judges.client import (
    JUDGE_OPTIONS,
    Answer,
    Ask,
    current_session,
    judge_trace_id,
    linked_trace,
    resolve_model,
)
from agentdocket.scorers.judges.parse import parse_conclusion, parse_score
from agentdocket.scorers.judges.prompts import render

NAME = "answer.reference"
RATIONALE_LIMIT = 4000


def answer_reference_batch(
    traces: Sequence[Trace], config: Mapping[str, Any]
) -> list[Outcome | None]:
    model, name = resolve_model(config.get("model"))
    temperature = config.get("temperature", 0.0)
    out: list[Outcome | None] = [None] * len(traces)
    asks: list[tuple[int, str, Ask]] = []
    for i, trace in enumerate(traces):
        case = trace.case
        if case is None or case.reference_answer is None:
            continue
        response = trace.response
        if response is None:
            out[i] = Outcome(failure_type="response:missing", rationale="no response event")
            continue
        kind: str = case.question_type or "conclusive"
        question = case.question or trace.question or ""
        prompt = render(
            f"reference_{kind}",
            question=question,
            gold_answer=case.reference_answer,
            answer=response,
        )
        parse = parse_conclusion if kind == "conclusive" else parse_score
        asks.append((i, kind, Ask(judge_trace_id(trace.trace_id, NAME, config), prompt, parse)))
    answers = current_session().ask(
        model,
        name,
        temperature,
        [a for _, _, a in asks],
        retries=int(config.get("retries", 2)),
        max_concurrency=config.get("max_concurrency"),
    )
    for (i, kind, ask), answer in zip(asks, answers, strict=True):
        out[i] = _outcome(kind, answer, linked_trace(ask.trace_id, [answer]), name, temperature)
    return out


def _outcome(kind: str, answer: Answer, judge_trace: str, model: str, temperature: Any) -> Outcome:
    """The verdict of one reply: Match / Not Match, or a score of 1-5."""
    details: dict[str, Any] = {
        "question_type": kind,
        "model": model,
        "temperature": temperature,
        "attempts": answer.attempts,
        "cached": answer.cached,
    }
    rationale = (answer.reply or "")[:RATIONALE_LIMIT] or None
    if answer.failure is not None:
        return Outcome(
            failure_type=answer.failure,
            rationale=answer.error,
            details=details,
            judge_trace_id=judge_trace,
        )
    if kind == "conclusive":
        matched = answer.parsed == "Match"
        return Outcome(
            passed=matched,
            score=1.0 if matched else 0.0,
            label=answer.parsed,
            failure_type=None if matched else "answer:not_match",
            rationale=rationale,
            details=details,
            judge_trace_id=judge_trace,
        )
    details["score"] = answer.parsed
    return Outcome(
        score=float(answer.parsed),
        label=str(answer.parsed),
        rationale=rationale,
        details=details,
        judge_trace_id=judge_trace,
    )


def answer_reference(trace: Trace, config: Mapping[str, Any]) -> Outcome | None:
    return answer_reference_batch([trace], config)[0]


register(
    Scorer(
        "answer.reference",
        "1",
        "LLM judge against the reference answer (Figure 7 prompts): conclusive questions "
        "Match / Not Match, interpretive ones a score of 1-5",
        answer_reference,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("answer", "case"),
        batch=answer_reference_batch,
        metrics={"score_mean": ("score", "mean")},
        judge=True,
        options=JUDGE_OPTIONS,
        details={
            "question_type": "str: 'conclusive' or 'interpretive'",
            "model": "str: the judge model",
            "temperature": "float: its temperature",
            "attempts": "int: calls until a reply parsed",
            "cached": "bool: served from the judge-call cache",
            "score": "int: the judge's 1-5 score (interpretive questions)",
        },
    )
)
