"""A run's question and answer, read one event at a time, so that the runs projection (which
sees a run's events batch by batch) and :class:`~agentdocket.events.Trace` (which sees them
all) agree.

Each event that can give the question or the answer is a *candidate* with a sort key; of a
run's candidates the one with the smallest key wins, whatever order the batches came in. The
precedence, first to last:

question
    1. the run's own question (``run.started``: our tracer's ``question``, a foreign root
       span's input text);
    2. the last user message of the run's first model call that has one (instrumentations
       that put the question only in the model's input, as the GenAI conventions do).

answer
    1. the text of the run's last ``response`` event (our tracer's ``run.respond``, a foreign
       root span's output text, a framework's final-answer tool);
    2. the final assistant text of the run's last model call that recorded its reply; none
       when that reply only asks for tools (a reply that only calls tools is no answer).

A model call's messages are those of its ``llm.called`` event, or of the ``llm.messages``
event that carried them apart from it (OpenTelemetry log records): either is a candidate.

"First" and "last" follow :func:`~agentdocket.events.trace.event_order` (seq, then time,
then event id), encoded in the key so that a plain string comparison decides, in Python and in
SQL alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from agentdocket.events.model import Event

MODEL_CALL_KINDS = frozenset({"llm.called", "llm.messages"})
USER_ROLES = frozenset({"user", "human"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "model"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# Reverses a key's order character by character (digits and lower-case hex).
_REVERSE = str.maketrans("0123456789abcdef", "fedcba9876543210")


class Candidate(NamedTuple):
    """A reading's value and its sort key (smallest wins); ``text`` may be None (a last
    model call that only asks for tools: it still outranks the calls before it)."""

    key: str
    text: str | None


def order_key(event: Event) -> str:
    """:func:`event_order` as a fixed-width string: seq, microseconds since 1970, event id."""
    micros = max(0, (event.ts - _EPOCH) // _MICROSECOND)
    return f"{max(0, event.seq):010d}{micros:017d}{event.event_id.hex}"


def question_candidate(event: Event) -> Candidate | None:
    """What ``event`` says of its run's question, if anything."""
    p = event.payload
    if event.kind == "run.started":
        question = p.get("question")
        return Candidate("0" + order_key(event), question) if question else None
    if event.kind in MODEL_CALL_KINDS:
        text = last_user_text(p.get("input_messages") or ())
        return Candidate("1" + order_key(event), text) if text else None
    return None


def answer_candidate(event: Event) -> Candidate | None:
    """What ``event`` says of its run's answer, if anything."""
    p = event.payload
    if event.kind == "response":
        return Candidate("0" + order_key(event).translate(_REVERSE), str(p["text"]))
    if event.kind in MODEL_CALL_KINDS and p.get("output_messages"):
        text = final_text(p["output_messages"])
        return Candidate("1" + order_key(event).translate(_REVERSE), text)
    return None


def best(a: Candidate | None, b: Candidate | None) -> Candidate | None:
    """The candidate that wins of two (either may be absent)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a.key <= b.key else b


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    users = [m for m in messages if m.get("role") in USER_ROLES]
    return str(users[-1]["content"]) if users and users[-1].get("content") else None


def final_text(messages: Sequence[Mapping[str, Any]]) -> str | None:
    replies = [
        m
        for m in messages
        if m.get("role") in ASSISTANT_ROLES and m.get("content") and not m.get("tool_calls")
    ]
    return str(replies[-1]["content"]) if replies else None
