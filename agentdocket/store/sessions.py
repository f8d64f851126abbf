"""Sessions: conversations of several turns, each turn a run.

A session is the runs that share a conversation id: the ``conversation_id`` a run's root
span gave (the GenAI conventions' ``gen_ai.conversation.id``, OpenInference's ``session.id``,
the tracer's ``tracer.run(..., conversation=...)``), kept in the run's attributes by the
``runs`` projection. Sessions are read from that projection, grouped, so they are rebuilt from
the log whenever it is, and a late turn is in its session as soon as its run is. Turns are
ordered by the time each run started.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from agentdocket.store.reading import Reader
from agentdocket.store.recorder import Recorder
from agentdocket.store.rows import Run, Session, typed


class Sessions:
    """Lists sessions and gives one session's turns."""

    def __init__(self, db: Recorder, reader: Reader) -> None:
        self.db = db
        self.reader = reader

    @property
    def _id(self) -> str:
        return self.db.json_text("attributes", "conversation_id")

    def _where(self, dataset: str | None, agent: str | None) -> tuple[str, list[Any]]:
        """The runs :meth:`~Reader.list_runs` would select, of any conversation."""
        where, params = self.reader.run_filter(dataset=dataset, agent=agent, since=None)
        return f"{where} AND {self._id} IS NOT NULL", params

    def recent(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int | None = 50
    ) -> list[Session]:
        """Sessions, the most recently active first, with their first question and last
        answer; ``dataset`` and ``agent`` select the turns counted."""
        where, params = self._where(dataset, agent)
        sql = (
            f"SELECT {self._id} AS session_id, min(agent) AS agent, count(*) AS turns, "
            "sum(CASE WHEN status = 'error' THEN 1 ELSE 0 END) AS errors, "
            "sum(CASE WHEN ended_at IS NULL THEN 1 ELSE 0 END) AS running, "
            "min(started_at) AS started_at, max(ended_at) AS ended_at, "
            "min(first_ts) AS first_ts, max(last_ts) AS last_ts "
            f"FROM runs {where} GROUP BY {self._id} ORDER BY max(last_ts) DESC, {self._id}"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        found = list(self.db.dicts(sql, params))
        ends = self._ends([str(r["session_id"]) for r in found], where, params)
        sessions: list[Session] = []
        for r in found:
            errors, running = int(r["errors"]), int(r["running"])
            first, last = ends.get(str(r["session_id"]), (None, None))
            sessions.append(
                Session(
                    session_id=str(r["session_id"]),
                    agent=r["agent"],
                    turns=int(r["turns"]),
                    errors=errors,
                    running=running,
                    status="error" if errors else "running" if running else "ok",
                    first_question=first,
                    last_answer=last,
                    started_at=r["started_at"],
                    ended_at=None if running else r["ended_at"],
                    first_ts=r["first_ts"],
                    last_ts=r["last_ts"],
                )
            )
        return sessions

    def _ends(
        self, ids: Sequence[str], where: str, params: Sequence[Any]
    ) -> dict[str, tuple[str | None, str | None]]:
        """Each session's first question and last answer (the turns' in start order)."""
        ends: dict[str, tuple[str | None, str | None]] = {}
        rows = self.db.read_among(
            f"SELECT {self._id}, question, answer FROM runs {where} AND {{among}} "
            "ORDER BY started_at, trace_id",
            self._id,
            ids,
            params,
        )
        for session_id, question, answer in rows:  # a session's rows all in one chunk
            first, _ = ends.get(session_id, (question, None))
            ends[session_id] = (first, answer)
        return ends

    def count(self, *, dataset: str | None = None, agent: str | None = None) -> int:
        """How many sessions :meth:`recent` would list with no limit."""
        where, params = self._where(dataset, agent)
        [(n,)] = self.db.read(f"SELECT count(DISTINCT {self._id}) FROM runs {where}", params)
        return int(n)

    def turns(self, session_id: str) -> list[Run]:
        """The runs of a session, in the order they started (none: no such session)."""
        rows = self.db.dicts(
            f"SELECT * FROM runs WHERE started_at IS NOT NULL AND {self._id} = ? "
            "ORDER BY started_at, trace_id",
            [session_id],
        )
        return [typed(Run, r) for r in rows]

    def with_prefix(self, prefix: str) -> list[str]:
        """The first ten session ids starting with ``prefix``."""
        rows = self.db.read(
            f"SELECT DISTINCT {self._id} FROM runs WHERE started_at IS NOT NULL AND "
            f"{self._id} LIKE ? ORDER BY 1 LIMIT 10",
            [prefix + "%"],
        )
        return [str(r[0]) for r in rows]

    def ids(
        self,
        *,
        dataset: str | None = None,
        agent: str | None = None,
        active_from: datetime | None = None,
        active_until: datetime | None = None,
    ) -> list[str]:
        """Every session id (of turns of ``dataset`` and ``agent``), the oldest activity first;
        with ``active_from`` / ``active_until``, those whose last event falls between them (a
        session idle since ``active_until`` at least)."""
        where, params = self._where(dataset, agent)
        having: list[str] = []
        for op, at in ((">=", active_from), ("<=", active_until)):
            if at is not None:
                having.append(f"max(last_ts) {op} ?")
                params.append(self.db.to_db("ts", at))
        sql = f"SELECT {self._id} FROM runs {where} GROUP BY {self._id}"
        if having:
            sql += " HAVING " + " AND ".join(having)
        sql += f" ORDER BY max(last_ts), {self._id}"
        return [str(r[0]) for r in self.db.read(sql, params)]

    def turn_ids(self, session_ids: Sequence[str]) -> dict[str, list[str]]:
        """The trace ids of each session's turns, in the order they started (a session that
        has none is left out)."""
        found: dict[str, list[str]] = {}
        rows = self.db.read_among(
            f"SELECT {self._id}, trace_id FROM runs WHERE started_at IS NOT NULL AND {{among}} "
            "ORDER BY started_at, trace_id",
            self._id,
            list(session_ids),
            [],
        )
        for session_id, trace_id in rows:
            found.setdefault(str(session_id), []).append(str(trace_id))
        return found

    def of_runs(self, trace_ids: Sequence[str]) -> list[str]:
        """The sessions the runs among ``trace_ids`` are turns of, the oldest first."""
        rows = self.db.read_among(
            f"SELECT {self._id}, started_at FROM runs WHERE {self._id} IS NOT NULL AND {{among}}",
            "trace_id",
            list(trace_ids),
            [],
        )
        first: dict[str, Any] = {}
        for session_id, started in rows:
            if session_id not in first or str(started) < str(first[session_id]):
                first[str(session_id)] = started
        return sorted(first, key=lambda s: (str(first[s]), s))

    def last_turns(self, trace_ids: Sequence[str]) -> set[str]:
        """The last turn of each session the runs among ``trace_ids`` are turns of (a session
        scorer's verdict is kept there)."""
        turns = self.turn_ids(self.of_runs(trace_ids))
        return {ids[-1] for ids in turns.values()}
