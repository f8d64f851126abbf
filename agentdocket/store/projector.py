"""The projector: writes the projections of appended events (runs, verdicts, judge calls) in
the transaction that appends them, and rebuilds them from the whole log.

What a batch of events changes is computed by :func:`agentdocket.store.projections.project`, a
pure function; this module turns it into upserts whose merge rules do not depend on the order
of batches, so that a rebuild gives the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from agentdocket.events import Event
from agentdocket.store.months import assign
from agentdocket.store.projections import (
    JUDGE_CALL_COLUMNS,
    RUN_COLUMNS,
    RUN_COUNTS,
    RUN_IDENTITY,
    RUN_READINGS,
    VERDICT_COLUMNS,
    Projection,
    project,
)
from agentdocket.store.recorder import EVENT_COLUMNS, STORED_EVENT_COLUMNS, Recorder
from agentdocket.store.roles import EventLog
from agentdocket.store.upkeep import Refreshed, Upkeep

# events a rebuild reads and projects at a time
BATCH = 10_000
PROJECTION_TABLES = ("verdicts", "runs", "judge_calls")


def _upsert_runs_clause(target: tuple[str, ...], least: str, greatest: str) -> str:
    sets = [f"{c} = coalesce(runs.{c}, excluded.{c})" for c in RUN_IDENTITY]
    for value, key in RUN_READINGS:  # the candidate with the smaller key, as projections does
        takes = f"(runs.{key} IS NULL OR excluded.{key} < runs.{key})"
        sets.append(f"{value} = CASE WHEN {takes} THEN excluded.{value} ELSE runs.{value} END")
        sets.append(f"{key} = CASE WHEN {takes} THEN excluded.{key} ELSE runs.{key} END")
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
    return f"ON CONFLICT ({', '.join(target)}) DO UPDATE SET " + ", ".join(sets)


class Projector:
    """Projection rows on a recorder's connection."""

    def __init__(self, db: Recorder, log: EventLog, upkeep: Upkeep | None = None) -> None:
        self.db = db
        self.log = log
        self.upkeep = upkeep
        self.runs_upsert = _upsert_runs_clause(log.unique_key("runs"), db.least, db.greatest)
        self.verdicts_conflict = f"ON CONFLICT ({', '.join(log.unique_key('verdicts'))}) DO NOTHING"

    def apply(
        self,
        conn: Any,
        proj: Projection,
        months: dict[str, date],
        new: frozenset[str] = frozenset(),
    ) -> None:
        """Upsert what ``proj`` changes, on ``conn`` (inside the caller's transaction), under
        the runs' ``months``: :func:`agentdocket.store.months.place` of the same events, the
        one place a run's month is decided (it covers the runs their verdicts judge). ``new``:
        the traces nothing stored is about yet (their runs are inserted, not merged). The
        upkeep, where there is one, is told before and after (:mod:`agentdocket.store.upkeep`)."""
        if self.upkeep is None:
            self._upsert(conn, proj, months, new)
            return
        before = self.upkeep.before(conn, proj, months, new)
        self._upsert(conn, proj, months, new)
        self.upkeep.after(conn, proj, months, before, new)

    def _upsert(
        self, conn: Any, proj: Projection, months: dict[str, date], new: frozenset[str]
    ) -> None:
        month = self._month_column(months)
        if proj.runs:
            rows = [(*r, month(r[0])) for r in self.db.as_rows(RUN_COLUMNS, proj.runs.values())]
            columns = (*RUN_COLUMNS, "run_month")
            fresh = [(t,) for t in proj.runs if t in new]
            self.db.merge(conn, "runs", columns, ("trace_id",), rows, self.runs_upsert, new=fresh)
        # Rows keyed by their event (a verdict) or by a cache key whose first reply stays:
        # inserted once, never changed.
        if proj.verdicts:
            rows = [(*r, month(r[1])) for r in self.db.as_rows(VERDICT_COLUMNS, proj.verdicts)]
            columns = (*VERDICT_COLUMNS, "run_month")
            key = ("trace_id", "verdict_id")
            self.db.merge(conn, "verdicts", columns, key, rows, self.verdicts_conflict, new=True)
        if proj.judge_calls:
            rows = self.db.as_rows(JUDGE_CALL_COLUMNS, proj.judge_calls)
            conflict = "ON CONFLICT (cache_key) DO NOTHING"
            self.db.merge(conn, "judge_calls", JUDGE_CALL_COLUMNS, ("cache_key",), rows, conflict)

    def _month_column(self, months: dict[str, date]) -> Any:
        to_db = self.db.to_db
        converted = {t: to_db("run_month", m) for t, m in months.items()}
        return converted.__getitem__

    def refresh_dashboards(
        self, progress: Callable[[int, int], None] | None = None
    ) -> Refreshed | None:
        """Bring the dashboards' hourly rollups up to date (the upkeep's refresh,
        :mod:`agentdocket.dashboards.upkeep`); None where there are none (SQLite) or their
        layer is not installed. ``progress(done, total)`` counts stale hours."""
        return self.upkeep.refresh(progress) if self.upkeep is not None else None

    def rebuild(self, batch_size: int = BATCH) -> int:
        """Drop the projections and replay the whole event log into them, in one transaction.
        Returns the number of events replayed."""
        with self.db.write() as conn:
            self.log.lock_for_rebuild(conn)
            if self.upkeep is not None:  # the hours of the runs that were
                self.upkeep.rebuilding(conn)
            for table in PROJECTION_TABLES:
                self.db.execute(conn, f"DELETE FROM {table}")
            count = 0
            for chunk, months in self._stream_events(conn, batch_size):
                self._upsert(conn, project(chunk), months, frozenset())
                count += len(chunk)
            if self.upkeep is not None:  # and of the runs that are
                self.upkeep.rebuilding(conn)
        return count

    def _stream_events(self, conn: Any, size: int) -> Iterator[tuple[list[Event], dict[str, date]]]:
        columns = ", ".join(STORED_EVENT_COLUMNS)
        sql = f"SELECT {columns} FROM events ORDER BY trace_id, seq, event_id"
        width = len(EVENT_COLUMNS)
        for rows in self.db.stream_on(conn, sql, size):
            events = [self.db.event_of(r[:width]) for r in rows]
            yield events, assign(self.log, conn, events)
