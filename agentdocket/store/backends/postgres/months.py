"""PostgreSQL's months: a month is a partition of ``events``, ``runs`` and ``verdicts``
(migration 0010), made ahead or when a late event needs it, dropped whole by retention, both
under one lock order (:mod:`.locks`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any, TypeVar

import psycopg

from agentdocket.store.backends.citus.ops import LEDGER_KEEP
from agentdocket.store.backends.postgres.errors import mapped_errors
from agentdocket.store.backends.postgres.locks import with_ddl_lock
from agentdocket.store.errors import StoreError
from agentdocket.store.roles import Month, Months

T = TypeVar("T")
# How many of these months' partitions are missing.
MISSING_PARTITIONS = (
    "SELECT count(*) FROM unnest(%s::date[]) AS m, unnest(ARRAY['events', 'runs', 'verdicts']) "
    "AS t WHERE to_regclass(quote_ident(t || '_' || to_char(m, 'YYYY_MM'))) IS NULL"
)

# The judge calls made in a month's traces. Not a join on the trace: the judge cache is
# distributed by its key on Citus, so the month's traces are read first (one subquery).
OF_MONTH = "WHERE trace_id IN (SELECT trace_id FROM trace_months WHERE run_month = ?)"


class PostgresMonths(Months):
    """Months as partitions."""

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
            "judge_calls": self._one(conn, f"SELECT count(*) FROM judge_calls {OF_MONTH}", month),
        }
        newer = self._one(
            conn,
            f"SELECT count(*) FROM {runs} WHERE greatest(last_ts, ended_at) >= ?",
            window_start,
        )
        return Month(month, rows, newer)

    def prune(self, conn: Any) -> int:
        # The arrival ledger of a Citus coordinator (agentdocket.store.backends.citus.recorder).
        sql = f"DELETE FROM arrival_ledger WHERE at < now() - interval '{LEDGER_KEEP}'"
        return int(self.db.execute(conn, sql))

    def drop(self, conn: Any, month: date) -> None:
        self.db.execute(conn, f"DELETE FROM judge_calls {OF_MONTH}", [month])
        self.db.execute(conn, "DELETE FROM trace_months WHERE run_month = ?", [month])
        for table in ("verdicts", "runs", "events"):
            self.db.execute(conn, f"DROP TABLE {self._part(table, month)}")

    def ensure_partitions(self, months: set[date]) -> int:
        if not months:
            return 0
        wanted = sorted(months)
        conn = self.db.connection
        with mapped_errors():  # the common case: all there, a catalog lookup locking nothing
            [(missing,)] = conn.execute(MISSING_PARTITIONS, [wanted]).fetchall()
        if not missing:
            return 0

        def make(conn: psycopg.Connection[Any]) -> int:
            [(made,)] = conn.execute(
                "SELECT agentdocket_ensure_partitions(%s::date[])", [wanted]
            ).fetchall()
            return int(made)

        return with_ddl_lock(conn, make)

    def partition_ddl(self, work: Callable[[Any], T], *partitions: str) -> T:
        return with_ddl_lock(self.db.connection, work, *partitions)
