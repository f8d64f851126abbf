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
one lock order of partition DDL (:mod:`agentdocket.store.backends.postgres.locks`), so it never
deadlocks with ingestion making partitions or with the rollup refresh; a month whose tables
stay busy past the budget (or that the database fails to drop) is kept and reported with the
reason, and the months dropped before it stay dropped and reported. The rollups of the
dropped hours are refreshed afterwards when the refresh can run now; else the next refresh
does it (panels read stale hours live meanwhile).
"""

from __future__ import annotations

import getpass
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

from agentdocket.events import Event, RetentionApplied, format_ts
from agentdocket.store.appending import Appender
from agentdocket.store.errors import StoreError
from agentdocket.store.limits import parse_duration
from agentdocket.store.months import month_of
from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import Month, Months
from agentdocket.store.upkeep import Upkeep

TABLES = ("events", "runs", "verdicts", "judge_calls")


def parse_keep(text: str) -> timedelta:
    """``90d``, ``12w`` or ``36h`` as a duration; at least one day."""
    try:
        keep = parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"--keep {exc}") from None
    if keep < timedelta(days=1):
        raise ValueError(f"--keep {text!r}: keep at least one day")
    return keep


@dataclass(frozen=True)
class Plan:
    """What a retention would do: the months past the window, those it drops and those it
    keeps because runs in them are newer than the window."""

    keep: str
    window_start: datetime
    drop: list[Month] = field(default_factory=list)
    refused: list[Month] = field(default_factory=list)
    samples: int = 0  # process samples older than the window
    kept_datasets: tuple[str, ...] = ()  # datasets whose months stay, whatever their age


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

    def __init__(
        self, db: Recorder, months: Months, appender: Appender, upkeep: Upkeep | None = None
    ) -> None:
        self.db = db
        self.months = months
        self.appender = appender
        self.upkeep = upkeep

    def plan(
        self, keep: str, now: datetime | None = None, kept_datasets: Sequence[str] = ()
    ) -> Plan:
        """The months past the window ``keep`` (``90d``) before ``now``, each with its runs by
        dataset; a month holding runs of ``kept_datasets`` stays (imported research data, say:
        retention drops whole months). Changes nothing."""
        window_start = (now or datetime.now(UTC)) - parse_keep(keep)
        first_kept = month_of(window_start)  # the month the window starts in stays
        drop: list[Month] = []
        refused: list[Month] = []
        with self.db.write() as conn:  # one snapshot: counts and checks agree
            for month in self.months.stored(conn):
                if month >= first_kept:
                    continue
                counted = self._count(conn, month, window_start, kept_datasets)
                (refused if counted.stays else drop).append(counted)
            samples = self._samples(conn, window_start, delete=False)
        return Plan(keep, window_start, drop, refused, samples, tuple(kept_datasets))

    def _count(self, conn: Any, month: date, window_start: datetime, kept: Sequence[str]) -> Month:
        counted = self.months.count(conn, month, window_start)
        datasets = self.months.datasets(conn, month)
        return replace(counted, datasets=datasets, kept_runs=sum(datasets.get(d, 0) for d in kept))

    def apply(self, plan: Plan, progress: Callable[[Month], None] | None = None) -> Applied:
        """Drop the plan's months, each checked again in its own transaction (a late event
        may have made one newer meanwhile: it is refused then), and record each."""
        trace_id = uuid.uuid4().hex
        dropped: list[Month] = []
        refused, failed = list(plan.refused), []
        self.months.ensure_partitions({month_of(datetime.now(UTC))})  # where the record goes
        for month in plan.drop:
            try:
                counted = self._drop(plan, month.month, trace_id, len(dropped))
            except StoreError as exc:  # busy past the budget, or the database failing
                failed.append((month, str(exc)))
                continue
            if counted.stays:
                refused.append(counted)
                continue
            dropped.append(counted)
            if progress is not None:
                progress(counted)
        with self.db.write() as conn:
            samples = self._samples(conn, plan.window_start, delete=True)
            self.months.prune(conn)
        rollups = self._refresh() if dropped else "refreshed"
        return Applied(
            plan, dropped, refused, samples, trace_id if dropped else None, failed, rollups
        )

    def _drop(self, plan: Plan, month: date, trace_id: str, seq: int) -> Month:
        """Drop ``month`` and record it, unless a run in it became newer than the window or
        is of a kept dataset (then it is returned with ``newer_runs`` or ``kept_runs``,
        nothing dropped)."""
        # Counted before the lock, which then stays short (on PostgreSQL every query that
        # plans over the log waits for it); counted again only if events came meanwhile.
        with self.db.write() as conn:
            newest = self.months.newest(conn, month)
            counted = self._count(conn, month, plan.window_start, plan.kept_datasets)

        def drop(conn: Any) -> Month:
            now = counted
            if self.months.newest(conn, month) != newest:
                now = self._count(conn, month, plan.window_start, plan.kept_datasets)
            if not now.stays:
                if self.upkeep is not None:  # the dashboards' hours of its runs
                    self.upkeep.dropping(conn, month)
                self.months.drop(conn, month)
                self.appender.append_on(conn, [_record(plan, [now], trace_id, seq)])
            return now

        return self.months.partition_ddl(drop, *self.months.partitions(month))

    def _refresh(self) -> str:
        """The dropped hours' rollups, recomputed now if the refresh can run; never fails the
        retention, whose months are gone and recorded already."""
        if self.upkeep is None:
            return "refreshed"
        try:
            self.upkeep.refresh(emptied=True)
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
