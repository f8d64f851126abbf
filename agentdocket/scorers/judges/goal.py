"""``session.goal``: whether a conversation reached the user's goal, judged by an LLM over the
whole transcript.

It is the Judge of "How to evaluate a LLM agent?" with one scoring point, the goal: the judge
reads the chat history and a statement and answers in that document's JSON form,
``{"reason": ..., "is_hit": "yes" | "no"}``. The goal is the case's simulated user's goal, else
its reference answer (the user should end up with it), else what the user first asked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.events import Conversation
from agentdocket.scorers.base import Outcome, register, session_scorer
from agentdocket.scorers.judges.client import (
    JUDGE_OPTIONS,
    Ask,
    current_session,
    judge_trace_id,
    linked_trace,
    resolve_model,
)
from agentdocket.scorers.judges.points import parse_hit

NAME = "session.goal"
INSTRUCTION = (
    "You are the Judge of a conversation between a user and an AI agent. Read the chat history "
    "and decide whether the statement holds by the end of the conversation. Answer with a JSON "
    'object and nothing else: {"reason": "<one sentence>", "is_hit": "yes" or "no"}.'
)


def goal_of(conversation: Conversation) -> tuple[str, str] | None:
    """(where the goal comes from, the statement the judge checks), or None: no goal."""
    case = conversation.case
    if case is not None and case.user is not None:
        return "case.user.goal", f"The user's goal was reached: {case.user.goal}"
    if case is not None and case.reference_answer:
        return (
            "case.reference_answer",
            f"The agent gave the user this answer (in any words): {case.reference_answer}",
        )
    first = next((m for m in conversation.user_messages() if m.strip()), None)
    if first is None:
        return None
    return "first_question", f"The agent did what the user asked for: {first}"


def prompt(conversation: Conversation, statement: str) -> str:
    history = json.dumps(conversation.transcript(), ensure_ascii=False, indent=1)
    return f"{INSTRUCTION}\n\nThe chat history is:\n{history}\n\nThe statement is: {statement}"


def session_goal(
    conversations: Sequence[Conversation], config: Mapping[str, Any]
) -> list[Outcome | None]:
    out: list[Outcome | None] = [None] * len(conversations)
    asks: list[tuple[int, str, Ask]] = []
    for i, c in enumerate(conversations):
        goal = goal_of(c)
        if goal is None:
            continue
        own = judge_trace_id(c.last.trace_id, NAME, config)
        asks.append((i, goal[0], Ask(own, prompt(c, goal[1]), parse_hit)))
    if not asks:
        return out
    model, name = resolve_model(config.get("model"))
    answers = current_session().ask(
        model,
        name,
        config.get("temperature", 0.0),
        [a for _, _, a in asks],
        retries=int(config.get("retries", 2)),
        max_concurrency=config.get("max_concurrency"),
    )
    for (i, source, ask), answer in zip(asks, answers, strict=True):
        c = conversations[i]
        details: dict[str, Any] = {
            "session_id": c.session_id,
            "turns": len(c.turns),
            "goal_from": source,
            "model": name,
            "attempts": answer.attempts,
            "cached": answer.cached,
        }
        linked = linked_trace(ask.trace_id, [answer])
        if answer.failure is not None:
            out[i] = Outcome(
                failure_type=answer.failure,
                rationale=answer.error,
                details=details,
                judge_trace_id=linked,
            )
            continue
        hit, reason = answer.parsed
        out[i] = Outcome(
            passed=hit,
            score=1.0 if hit else 0.0,
            failure_type=None if hit else "session:goal_not_reached",
            rationale=reason or None,
            details=details,
            judge_trace_id=linked,
        )
    return out


register(
    session_scorer(
        NAME,
        "1",
        "LLM judge of the whole conversation: was the user's goal reached (the case's user goal, "
        "else its reference answer, else the first question)",
        session_goal,
        config={"model": None, "temperature": 0.0, "retries": 2},
        inputs=("answer", "question", "run.finished", "case"),
        judge=True,
        options=JUDGE_OPTIONS,
        details={
            "session_id": "str: the session judged",
            "turns": "int: how many turns it had when judged",
            "goal_from": "str: case.user.goal, case.reference_answer or first_question",
            "model": "str: the judge model",
            "attempts": "int: calls until a reply parsed",
            "cached": "bool: served from the judge-call cache",
        },
    )
)
