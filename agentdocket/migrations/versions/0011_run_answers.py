"""A run's question and answer in the runs projection.

``runs`` gains ``answer``, and the sort keys ``question_key`` and ``answer_key`` of the
candidates that gave the question and the answer (see :mod:`agentdocket.events.readings`:
of a run's candidates the smallest key wins, whatever order its batches arrived in). Before,
the question came only from the run's start and the answer was derived on read, so runs whose
question or answer lay in their model calls showed none.

The upgrade fills the three columns for the runs already stored from their events, by the
readings' rules as they stood at this revision (written out here: a migration does not change
when the code does). The downgrade drops them.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_REVERSE = str.maketrans("0123456789abcdef", "fedcba9876543210")
_USERS = frozenset({"user", "human"})
_ASSISTANTS = frozenset({"assistant", "ai", "model"})
_BATCH = 2000


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    op.execute("ALTER TABLE runs ADD COLUMN answer text")
    op.execute(f"ALTER TABLE runs ADD COLUMN question_key text{collate}")
    op.execute(f"ALTER TABLE runs ADD COLUMN answer_key text{collate}")
    _fill(postgres)


def downgrade() -> None:
    for column in ("answer_key", "question_key", "answer"):
        op.execute(f"ALTER TABLE runs DROP COLUMN {column}")


def _fill(postgres: bool) -> None:
    """Each stored run's question and answer from its run.started, llm.called and response
    events, read in trace order."""
    bind = op.get_bind()
    payload = "payload::text" if postgres else "payload"
    event_id = "event_id::text" if postgres else "event_id"
    rows = bind.execute(
        sa.text(
            f"SELECT trace_id, seq, ts, {event_id}, kind, {payload} FROM events "
            "WHERE kind IN ('run.started', 'llm.called', 'llm.messages', 'response') "
            "AND trace_id IN (SELECT trace_id FROM runs) "
            "ORDER BY trace_id, seq, ts, event_id"
        ).execution_options(stream_results=True, yield_per=_BATCH)
    )
    update = sa.text(
        "UPDATE runs SET question = :question, question_key = :question_key, "
        "answer = :answer, answer_key = :answer_key WHERE trace_id = :trace_id"
    )
    pending: list[dict[str, Any]] = []
    for trace_id, events in _by_trace(rows):
        found = _readings(events)
        if found is not None:
            pending.append({"trace_id": trace_id, **found})
        if len(pending) >= _BATCH:
            bind.execute(update, pending)
            pending = []
    if pending:
        bind.execute(update, pending)


def _by_trace(rows: Any) -> Iterator[tuple[str, list[Sequence[Any]]]]:
    current: str | None = None
    events: list[Sequence[Any]] = []
    for row in rows:
        if row[0] != current:
            if current is not None:
                yield current, events
            current, events = row[0], []
        events.append(row)
    if current is not None:
        yield current, events


def _key(seq: int, ts: Any, event_id: str) -> str:
    if isinstance(ts, str):
        ts = datetime.fromisoformat(ts)
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    micros = max(0, (ts - _EPOCH) // (datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH))
    return f"{max(0, int(seq)):010d}{micros:017d}{event_id.replace('-', '')}"


def _readings(events: Sequence[Sequence[Any]]) -> dict[str, Any] | None:
    """The question (the first run.started naming one, else the first model call with a user
    message) and the answer (the last response, else the final text of the last model call
    that recorded its reply); a model call's messages may come in llm.messages events."""
    question: tuple[str, str] | None = None
    answer: tuple[str, str | None] | None = None
    llm_question: tuple[str, str] | None = None
    for _, seq, ts, event_id, kind, raw in events:
        p: Mapping[str, Any] = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
        key = _key(seq, ts, str(event_id))
        if kind == "run.started" and p.get("question") and question is None:
            question = ("0" + key, str(p["question"]))
        elif kind == "response":
            answer = ("0" + key.translate(_REVERSE), str(p.get("text", "")))
        elif kind in ("llm.called", "llm.messages"):
            users = [m for m in p.get("input_messages") or () if m.get("role") in _USERS]
            if llm_question is None and users and users[-1].get("content"):
                llm_question = ("1" + key, str(users[-1]["content"]))
            if p.get("output_messages") and (answer is None or answer[0].startswith("1")):
                replies = [
                    m
                    for m in p.get("output_messages") or ()
                    if m.get("role") in _ASSISTANTS and m.get("content") and not m.get("tool_calls")
                ]
                text = str(replies[-1]["content"]) if replies else None
                answer = ("1" + key.translate(_REVERSE), text)
    question = question or llm_question
    if question is None and answer is None:
        return None
    return {
        "question": question[1] if question else None,
        "question_key": question[0] if question else None,
        "answer": answer[1] if answer else None,
        "answer_key": answer[0] if answer else None,
    }
