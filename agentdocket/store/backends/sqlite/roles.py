"""SQLite's roles: one file and one writer at a time, so the position of an event is its
commit order, a claim on a run is never contested and a month is a set of rows (deleted, the
one DELETE on the log)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime
from typing import Any

from agentdocket.events import Event
from agentdocket.store.backends.sqlite.recorder import SqliteRecorder, parse_ts, to_ts
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.projections import Projection, project
from agentdocket.store.recorder import EVENT_COLUMNS, STORED_EVENT_COLUMNS, dumps
from agentdocket.store.roles import ArrivalOrder, EventLog, Month, Months

CHUNK = 500  # bound parameters per IN (...) lookup


class SqliteEventLog(EventLog):
    """The event log in one table; inserts skip the events already stored, looked up first."""

    db: SqliteRecorder

    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        # one table: the months narrow nothing here
        where, params = self.db.any_of("trace_id", ids)
        if kinds is not None:
            kinds_where, kinds_params = self.db.any_of("kind", sorted(kinds))
            where += f" AND {kinds_where}"
            params += kinds_params
        rows = self.db.read(
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE {where} "
            "ORDER BY trace_id, seq, ts, event_id",
            params,
        )
        loads = stored_loads
        return [
            Event(uuid.UUID(r[0]), r[1], r[2], r[3], r[4], parse_ts(r[5]), r[6], loads(r[8]), r[7])
            for r in rows
        ]

    def lock_for_rebuild(self, conn: Any) -> None:
        pass  # BEGIN IMMEDIATE already excludes other writers

    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
        redo: bool = False,
    ) -> tuple[int, Projection]:
        ids = [str(e.event_id) for e in events]
        stored: set[str] = set()
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ", ".join("?" * len(chunk))
            rows = conn.execute(f"SELECT event_id FROM events WHERE event_id IN ({marks})", chunk)
            stored.update(r[0] for r in rows)
        encoded = payloads or [None] * len(events)
        new = [
            (e, p) for e, p in zip(events, encoded, strict=True) if str(e.event_id) not in stored
        ]
        # Arrival order: the writer holds the database's one write lock (BEGIN IMMEDIATE), so
        # numbering after the highest stored position is the order of commits too.
        [(last,)] = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchall()
        received = to_ts(datetime.now(UTC))
        conn.executemany(
            f"INSERT INTO events ({', '.join(STORED_EVENT_COLUMNS)}, position, received_at) "
            f"VALUES ({', '.join('?' * 12)})",
            [
                (
                    str(e.event_id),
                    e.trace_id,
                    e.span_id,
                    e.parent_span_id,
                    e.seq,
                    to_ts(e.ts),
                    e.kind,
                    e.schema_version,
                    dumps(e.payload) if p is None else p.decode(),
                    months[e.trace_id].isoformat(),
                    last + i,
                    received,
                )
                for i, (e, p) in enumerate(new, 1)
            ],
        )
        if projected is not None and len(new) == len(events):
            return len(new), projected
        return len(new), project(e for e, _ in new)


class SqliteArrivalOrder(ArrivalOrder):
    """One writer at a time: the position is the commit order, and every claim holds."""

    def arrival_order(self) -> tuple[str, tuple[str, ...]]:
        return "0", ("position",)  # one writer at a time: the position is the commit order

    def arrived_after(self, tx: int, seq: int) -> tuple[str, list[Any]]:
        return "position > ?", [seq]

    def arrived_by(self, tx: int, seq: int, alias: str) -> tuple[str, list[Any]]:
        return f"{alias}.position <= ?", [seq]

    def readable(self) -> str:
        return "1 = 1"  # what is committed is in order

    def claim_runs(self, key: str, trace_ids: Sequence[str]) -> list[str]:
        return list(trace_ids)  # one process writes at a time; a verdict twice is stored once

    def release_runs(self, key: str, trace_ids: Sequence[str]) -> None:
        pass


SQLITE_NO_DELETE = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, "
    "'agentdocket: DELETE on table events refused: it is append-only'); END"
)


class SqliteMonths(Months):
    """Retention's months on SQLite: a month's rows, deleted (the one DELETE on the log)."""

    def newest(self, conn: Any, month: date) -> Any:
        return self._one(
            conn, "SELECT max(position) FROM events WHERE run_month = ?", month.isoformat()
        )

    def stored(self, conn: Any) -> list[date]:
        rows = self.db.read_on(
            conn, "SELECT DISTINCT run_month FROM events WHERE run_month IS NOT NULL"
        )
        return sorted(self.db.from_db("run_month", r[0]) for r in rows)

    def count(self, conn: Any, month: date, window_start: datetime) -> Month:
        m = month.isoformat()
        rows = {
            table: self._one(conn, f"SELECT count(*) FROM {table} WHERE run_month = ?", m)
            for table in ("events", "runs", "verdicts")
        }
        rows["judge_calls"] = self._one(
            conn,
            "SELECT count(*) FROM judge_calls WHERE trace_id IN "
            "(SELECT trace_id FROM events WHERE run_month = ?)",
            m,
        )
        newer = self._one(
            conn,
            "SELECT count(*) FROM runs WHERE run_month = ? AND max(coalesce(last_ts, ''), "
            "coalesce(ended_at, '')) >= ?",
            m,
            self.db.to_db("ts", window_start),
        )
        return Month(month, rows, newer)

    def drop(self, conn: Any, month: date) -> None:
        m = [month.isoformat()]
        conn.execute(
            "DELETE FROM judge_calls WHERE trace_id IN "
            "(SELECT trace_id FROM events WHERE run_month = ?)",
            m,
        )
        conn.execute("DELETE FROM verdicts WHERE run_month = ?", m)
        conn.execute("DELETE FROM runs WHERE run_month = ?", m)
        conn.execute("DELETE FROM trace_months WHERE run_month = ?", m)
        # The one DELETE on the log: its trigger set aside in this transaction only.
        conn.execute("DROP TRIGGER events_no_delete")
        conn.execute("DELETE FROM events WHERE run_month = ?", m)
        conn.execute(SQLITE_NO_DELETE)
