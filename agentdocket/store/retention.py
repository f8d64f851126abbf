"""Retention: whole months of runs leave the log, and the log records that they did.

A month goes when all of it is older than the window kept (``--keep 90d``: months that ended
before ``now - 90 days``) and none of its runs is newer than the window: a run whose last
event is inside the window keeps its month (it is reported as refused, with the count). With a
month go its runs and everything about them: their events, run rows, verdicts, the judge calls
recorded in traces of that month, and the dashboards' rollups of their hours, which are marked
stale and recomputed from what is left. Process samples older than the window go too.

- PostgreSQL drops the month's partitions of ``events``, ``runs`` and ``verdicts`` (migration
  0010): no row is deleted from the log, and the time does not grow with the month's size.
- SQLite deletes the month's rows. Its events are append-only by trigger; this is the one place
  that sets the trigger aside, inside the transaction that deletes, and puts it back there.

Each month is dropped in a transaction of its own, checked again under lock, and the
``retention.applied`` event recording what went (rows by table) is appended in that same
transaction: a month is either gone and recorded, or neither. On PostgreSQL the drop takes the
one lock order of partition DDL (:mod:`agentdocket.store.postgres_locks`), so it never
deadlocks with ingestion making partitions or with the rollup refresh; a month whose tables
stay busy past the budget (or that the database fails to drop) is kept and reported with the
reason, and the months dropped before it stay dropped and reported. The rollups of the
dropped hours are refreshed afterwards when the refresh can run now; else the next refresh
does it (panels read stale hours live meanwhile).
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agentdocket.events import Event, RetentionApplied, format_ts
from agentdocket.store.appending import Appender
from agentdocket.store.errors import StoreError
from agentdocket.store.limits import parse_duration
from agentdocket.store.months import month_of
from agentdocket.store.recorder import Recorder

TABLES = ("events", "runs", "verdicts", "judge_calls")


def parse_keep(text: str) -> timedelta:
    """``90d``, ``12w`` or ``36h`` as a duration; at least one day."""
    try:
        keep = parse_duration(text)
    except ValueError:
        raise ValueError(
            f"--keep {text!r}: give a number and a unit, h, d or w (e.g. 90d)"
        ) from None
    if keep < timedelta(days=1):
        raise ValueError(f"--keep {text!r}: keep at least one day")
    return keep


@dataclass(frozen=True)
class Month:
    """A month past the window: the rows it holds, by table, and its runs newer than the
    window (a month with any is kept)."""

    month: date
    rows: dict[str, int]
    newer_runs: int = 0

    @property
    def label(self) -> str:
        return self.month.strftime("%Y-%m")

    def as_dict(self) -> dict[str, Any]:
        return {"month": self.label, **self.rows, "newer_runs": self.newer_runs}


@dataclass(frozen=True)
class Plan:
    """What a retention would do: the months past the window, those it drops and those it
    keeps because runs in them are newer than the window."""

    keep: str
    window_start: datetime
    drop: list[Month] = field(default_factory=list)
    refused: list[Month] = field(default_factory=list)
    samples: int = 0  # process samples older than the window


@dataclass(frozen=True)
class Applied:
    plan: Plan
    dropped: list[Month]
    refused: list[Month]
    samples: int
    trace_id: str | None  # where the retention.applied event is
    # kept, with why: tables busy past the budget, or the database failing meanwhile
    failed: list[tuple[Month, str]] = field(default_factory=list)
    rollups: str = "refreshed"  # or why the next refresh recomputes the dropped hours


class Retention:
    """Plans and applies retention on one database."""

    def __init__(self, db: Recorder, appender: Appender) -> None:
        self.db = db
        self.appender = appender
        self.months: _Months = (
            _PostgresMonths(db) if db.dialect == "postgresql" else _SqliteMonths(db)
        )

    def plan(self, keep: str, now: datetime | None = None) -> Plan:
        """The months past the window ``keep`` (``90d``) before ``now``; changes nothing."""
        window_start = (now or datetime.now(UTC)) - parse_keep(keep)
        first_kept = month_of(window_start)  # the month the window starts in stays
        drop: list[Month] = []
        refused: list[Month] = []
        with self.db.write() as conn:  # one snapshot: counts and checks agree
            for month in self.months.stored(conn):
                if month >= first_kept:
                    continue
                counted = self.months.count(conn, month, window_start)
                (refused if counted.newer_runs else drop).append(counted)
            samples = self._samples(conn, window_start, delete=False)
        return Plan(keep, window_start, drop, refused, samples)

    def apply(self, plan: Plan, progress: Callable[[Month], None] | None = None) -> Applied:
        """Drop the plan's months, each checked again in its own transaction (a late event
        may have made one newer meanwhile: it is refused then), and record each."""
        trace_id = uuid.uuid4().hex
        dropped: list[Month] = []
        refused, failed = list(plan.refused), []
        self.db.ensure_partitions({month_of(datetime.now(UTC))})  # where the record goes
        for month in plan.drop:
            try:
                counted = self._drop(plan, month.month, trace_id, len(dropped))
            except StoreError as exc:  # busy past the budget, or the database failing
                failed.append((month, str(exc)))
                continue
            if counted.newer_runs:
                refused.append(counted)
                continue
            dropped.append(counted)
            if progress is not None:
                progress(counted)
        with self.db.write() as conn:
            samples = self._samples(conn, plan.window_start, delete=True)
        rollups = self._refresh() if dropped else "refreshed"
        return Applied(
            plan, dropped, refused, samples, trace_id if dropped else None, failed, rollups
        )

    def _drop(self, plan: Plan, month: date, trace_id: str, seq: int) -> Month:
        """Drop ``month`` and record it, unless a run in it became newer than the window
        (then it is returned with ``newer_runs``, nothing dropped)."""
        # Counted before the lock, which then stays short (on PostgreSQL every query that
        # plans over the log waits for it); counted again only if events came meanwhile.
        with self.db.write() as conn:
            newest = self.months.newest(conn, month)
            counted = self.months.count(conn, month, plan.window_start)

        def drop(conn: Any) -> Month:
            now = counted
            if self.months.newest(conn, month) != newest:
                now = self.months.count(conn, month, plan.window_start)
            if not now.newer_runs:
                self.months.drop(conn, month)
                self.appender.append_on(conn, [_record(plan, [now], trace_id, seq)])
            return now

        return self.db.partition_ddl(drop, *self.months.partitions(month))

    def _refresh(self) -> str:
        """The dropped hours' rollups, recomputed now if the refresh can run; never fails the
        retention, whose months are gone and recorded already."""
        try:
            self.db.refresh_dashboards()
        except StoreError as exc:
            return f"left to the next refresh ({exc})"
        return "refreshed"

    def _samples(self, conn: Any, before: datetime, *, delete: bool) -> int:
        total = 0
        at = self.db.to_db("at", before)
        for table in ("pipeline_samples", "scoring_samples"):
            if delete:
                total += self.db.execute(conn, f"DELETE FROM {table} WHERE at < ?", [at])
            else:
                [(n,)] = self.db.read_on(conn, f"SELECT count(*) FROM {table} WHERE at < ?", [at])
                total += int(n)
        return total


def _record(plan: Plan, months: list[Month], trace_id: str, seq: int) -> Event:
    payload = RetentionApplied(
        keep=plan.keep,
        window_start=format_ts(plan.window_start),
        months=[m.as_dict() for m in months],
        refused=[m.as_dict() for m in plan.refused] if seq == 0 else [],
        process={"host": socket.gethostname(), "pid": os.getpid(), "user": getpass.getuser()},
    )
    return Event.create(trace_id=trace_id, span_id=uuid.uuid4().hex[:16], seq=seq, payload=payload)


class _Months:
    """One database's months: which hold runs, what each holds, and dropping one."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    def stored(self, conn: Any) -> list[date]:
        raise NotImplementedError

    def partitions(self, month: date) -> tuple[str, ...]:
        """The tables holding ``month`` alone, locked with the parents while it is dropped."""
        return ()

    def count(self, conn: Any, month: date, window_start: datetime) -> Month:
        raise NotImplementedError

    def newest(self, conn: Any, month: date) -> Any:
        """The month's last arrival (an event stored since changes it)."""
        raise NotImplementedError

    def drop(self, conn: Any, month: date) -> None:
        raise NotImplementedError

    def _one(self, conn: Any, sql: str, *params: Any) -> int:
        [(n,)] = self.db.read_on(conn, sql, list(params))
        return int(n or 0)


class _PostgresMonths(_Months):
    BOUND = re.compile(r"FROM \('(\d{4}-\d{2}-\d{2})'\)")

    def _part(self, table: str, month: date) -> str:
        return f"{table}_{month:%Y_%m}"

    def stored(self, conn: Any) -> list[date]:
        rows = self.db.read_on(
            conn,
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'events'::regclass",
        )
        months = []
        for (bound,) in rows:
            match = self.BOUND.search(bound or "")
            if match is None:
                raise StoreError(f"events has a partition agentdocket did not make: {bound}")
            months.append(date.fromisoformat(match.group(1)))
        return sorted(months)

    def partitions(self, month: date) -> tuple[str, ...]:
        # Writers of this month wait (and find no partition afterwards).
        return tuple(self._part(t, month) for t in ("events", "runs", "verdicts"))

    def newest(self, conn: Any, month: date) -> Any:
        rows = self.db.read_on(
            conn,
            f"SELECT tx::text, position FROM {self._part('events', month)} "
            "ORDER BY tx DESC, position DESC LIMIT 1",
        )
        return tuple(rows[0]) if rows else None

    def count(self, conn: Any, month: date, window_start: datetime) -> Month:
        events, runs, verdicts = (self._part(t, month) for t in ("events", "runs", "verdicts"))
        rows = {
            "events": self._one(conn, f"SELECT count(*) FROM {events}"),
            "runs": self._one(conn, f"SELECT count(*) FROM {runs}"),
            "verdicts": self._one(conn, f"SELECT count(*) FROM {verdicts}"),
            "judge_calls": self._one(
                conn,
                "SELECT count(*) FROM judge_calls j WHERE EXISTS "
                f"(SELECT 1 FROM {events} e WHERE e.trace_id = j.trace_id)",
            ),
        }
        newer = self._one(
            conn,
            f"SELECT count(*) FROM {runs} WHERE greatest(last_ts, ended_at) >= ?",
            window_start,
        )
        return Month(month, rows, newer)

    def drop(self, conn: Any, month: date) -> None:
        events, runs = self._part("events", month), self._part("runs", month)
        # The dashboards' hours of these runs are read live until the next refresh.
        self.db.execute(
            conn,
            "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT "
            "agentdocket_hour(coalesce(started_at, first_ts)), w "
            f"FROM {runs} CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w) "
            "WHERE coalesce(started_at, first_ts) IS NOT NULL",
        )
        self.db.execute(
            conn,
            "DELETE FROM judge_calls j WHERE EXISTS "
            f"(SELECT 1 FROM {events} e WHERE e.trace_id = j.trace_id)",
        )
        for table in ("verdicts", "runs", "events"):
            self.db.execute(conn, f"DROP TABLE {self._part(table, month)}")


SQLITE_NO_DELETE = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, "
    "'agentdocket: DELETE on table events refused: it is append-only'); END"
)


class _SqliteMonths(_Months):
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
        # The one DELETE on the log: its trigger set aside in this transaction only.
        conn.execute("DROP TRIGGER events_no_delete")
        conn.execute("DELETE FROM events WHERE run_month = ?", m)
        conn.execute(SQLITE_NO_DELETE)
