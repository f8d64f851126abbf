"""The projector: writes the projections of appended events (runs, verdicts, judge calls) in
the transaction that appends them, and rebuilds them from the whole log.

What a batch of events changes is computed by :func:`agentdocket.store.projections.project`, a
pure function; this module turns it into upserts whose merge rules do not depend on the order
of batches, so that a rebuild gives the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentdocket.events import Event
from agentdocket.store.projections import (
    JUDGE_CALL_COLUMNS,
    RUN_COLUMNS,
    RUN_COUNTS,
    RUN_IDENTITY,
    VERDICT_COLUMNS,
    Projection,
    project,
)
from agentdocket.store.recorder import EVENT_COLUMNS, Recorder

PROJECTION_TABLES = ("verdicts", "runs", "judge_calls")


def _upsert_runs_clause(least: str, greatest: str) -> str:
    sets = [f"{c} = coalesce(runs.{c}, excluded.{c})" for c in RUN_IDENTITY]
    sets += [f"{c} = coalesce(runs.{c}, excluded.{c})" for c in ("status", "error")]
    for c, fn in (
        ("started_at", least),
        ("ended_at", greatest),
        ("first_ts", least),
        ("last_ts", greatest),
    ):
        sets.append(
            f"{c} = {fn}(coalesce(runs.{c}, excluded.{c}), coalesce(excluded.{c}, runs.{c}))"
        )
    sets += [f"{c} = runs.{c} + excluded.{c}" for c in RUN_COUNTS]
    return "ON CONFLICT (trace_id) DO UPDATE SET " + ", ".join(sets)


class Projector:
    """Projection rows on a recorder's connection."""

    def __init__(self, db: Recorder) -> None:
        self.db = db
        self.runs_upsert = _upsert_runs_clause(db.least, db.greatest)

    def apply(self, conn: Any, proj: Projection) -> None:
        """Upsert what ``proj`` changes, on ``conn`` (inside the caller's transaction)."""
        if proj.runs:
            rows = self.db._rows(RUN_COLUMNS, proj.runs.values())
            self.db._merge(conn, "runs", RUN_COLUMNS, ("trace_id",), rows, self.runs_upsert)
        # Rows keyed by their event (a verdict) or by a cache key whose first reply stays:
        # inserted once, never changed.
        for objects, table, columns, key in (
            (proj.verdicts, "verdicts", VERDICT_COLUMNS, "verdict_id"),
            (proj.judge_calls, "judge_calls", JUDGE_CALL_COLUMNS, "cache_key"),
        ):
            if objects:
                rows = self.db._rows(columns, objects)
                conflict = f"ON CONFLICT ({key}) DO NOTHING"
                self.db._merge(conn, table, columns, (key,), rows, conflict)

    def rebuild(self, batch_size: int) -> int:
        """Drop the projections and replay the whole event log into them, in one transaction.
        Returns the number of events replayed."""
        with self.db._write() as conn:
            self.db._lock_for_rebuild(conn)
            for table in PROJECTION_TABLES:
                self.db._execute(conn, f"DELETE FROM {table}")
            count = 0
            for chunk in self._stream_events(conn, batch_size):
                self.apply(conn, project(chunk))
                count += len(chunk)
        return count

    def _stream_events(self, conn: Any, size: int) -> Iterator[list[Event]]:
        sql = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY trace_id, seq, event_id"
        for rows in self.db._stream_on(conn, sql, size):
            yield [self.db._event(r) for r in rows]
