"""PostgreSQL recorder: psycopg 3; its bulk writes (binary COPY) are in
:mod:`.copy`, its months in :mod:`.months`, its locks for DDL in :mod:`.locks`."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

import psycopg
from sqlalchemy.engine import URL

from agentdocket.events import Event
from agentdocket.store.backends.postgres.copy import adapt, copy_events, jsonb, merge_rows
from agentdocket.store.backends.postgres.errors import classify, mapped_errors
from agentdocket.store.backends.postgres.locks import (
    NEW_TRACE_LOCK,
    TRACE_LOCK,
    TraceLocks,
    with_ddl_lock,
)
from agentdocket.store.errors import RecordRefused
from agentdocket.store.escaping import ESC, unescape_text
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.month_ops import MonthOps
from agentdocket.store.projections import Projection
from agentdocket.store.recorder import (
    DATA_ERRORS,
    JSON_COLUMNS,
    TIME_COLUMNS,
    Recorder,
)
from agentdocket.store.rollup_refresh import Refreshed, refresh
from agentdocket.store.urls import display_url, psycopg_conninfo

# A partitioned table's unique keys hold its partition key (migration 0010).
UNIQUE_KEYS = {
    "events": ("trace_id", "event_id", "run_month"),
    "runs": ("trace_id", "run_month"),
    "verdicts": ("trace_id", "verdict_id", "run_month"),
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
T = TypeVar("T")
# How many of these months' partitions are missing.
MISSING_PARTITIONS = (
    "SELECT count(*) FROM unnest(%s::date[]) AS m, unnest(ARRAY['events', 'runs', 'verdicts']) "
    "AS t WHERE to_regclass(quote_ident(t || '_' || to_char(m, 'YYYY_MM'))) IS NULL"
)
# Every column as text or integer: psycopg's conversion of uuid, timestamptz and jsonb values
# costs more than the query (100k plan events: 1.5 s typed, 0.5 s like this), and orjson
# decodes the payloads faster than psycopg's json loader.
SCORING_EVENTS = (
    "SELECT event_id::text, trace_id, span_id, parent_span_id, seq, "
    "(extract(epoch FROM ts) * 1000000)::int8, kind, schema_version, payload::text "
    "FROM events WHERE trace_id = ANY(%s) AND run_month = ANY(%s){kinds} "
    "ORDER BY trace_id, seq, ts, event_id"
)


# The verdicts a scorer version gave some runs, in those runs' months (from trace_months,
# read first: the partitions of the other months are never read).
VERDICT_KEYS = (
    "SELECT trace_id, input_hash FROM verdicts WHERE scorer = %s AND scorer_version = %s "
    "AND trace_id = ANY(%s) AND run_month = ANY(%s::date[])"
)


# The horizon of arrivals a follower may read (PostgreSQL): the oldest transaction still in
# progress in this database, as the current snapshot sees it. The snapshot's xmin would do,
# but it counts every database of the cluster, so that one long transaction elsewhere (an
# analyst's query) would hold every follower back. Of the snapshot's in-progress
# transactions, those that ``pg_stat_activity`` shows running in another database are left
# out; one it does not show (it ended meanwhile, or the role may not read other sessions: give
# it ``pg_read_all_stats``) still counts, so the horizon is never later than is safe.
HORIZON = """(
    SELECT coalesce(
        (
            SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x
            WHERE mod(x::text::int8, 4294967296) NOT IN (
                SELECT backend_xid::text::int8 FROM pg_stat_activity
                WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()
            )
        ),
        pg_snapshot_xmax(snap.s)
    )
    FROM (SELECT pg_current_snapshot() AS s) snap
)"""


class PostgresRecorder(Recorder):
    """PostgreSQL through psycopg 3: binary COPY for events and projection rows."""

    dialect = "postgresql"
    rollups = True
    least = "least"
    greatest = "greatest"
    # COPY new rows straight in, falling back to the staging table on a duplicate key
    copy_first = True

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        self._locks = TraceLocks()
        self._conninfo = psycopg_conninfo(url)
        try:
            self._conn = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            mapped = classify(exc)
            raise type(mapped)(
                f"cannot connect to {display_url(url)}: {exc}".strip(), code=mapped.code
            ) from None
        # jsonb read back through orjson, unescaped where the stored text needs it; written
        # by COPY as the JSON the appender prepared
        psycopg.types.json.set_json_loads(stored_loads, self._conn)
        adapt(self._conn)
        # No JIT: the store's queries are short, and a plan over a dozen monthly partitions
        # costs enough to be compiled, seconds for a query that runs in milliseconds.
        with mapped_errors():
            self._conn.execute("SET jit = off")

    @property
    def connection(self) -> Any:
        """The psycopg connection itself, for what needs the backend as it is (a tool, a test
        recording the store's statements); the store's own work goes through the methods."""
        return self._conn

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection[Any]]:
        self._locks = TraceLocks()  # held until the transaction ends
        with mapped_errors(), self._conn.transaction():
            yield self._conn

    @contextmanager
    def savepoint(self, conn: Any) -> Iterator[None]:
        try:
            with conn.transaction():
                yield
        except psycopg.Error as exc:
            raise classify(exc) from exc
        except DATA_ERRORS as exc:
            raise RecordRefused(f"{type(exc).__name__}: {exc}") from exc

    def ping(self) -> None:
        with mapped_errors():
            self._conn.execute("SELECT 1")

    def read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.read_on(self._conn, query, params)

    # --- months -------------------------------------------------------------------------------

    def unique_key(self, table: str) -> tuple[str, ...]:
        return UNIQUE_KEYS[table]

    def ensure_partitions(self, months: set[date]) -> int:
        if not months:
            return 0
        wanted = sorted(months)
        with mapped_errors():  # the common case: all there, a catalog lookup locking nothing
            [(missing,)] = self._conn.execute(MISSING_PARTITIONS, [wanted]).fetchall()
        if not missing:
            return 0

        def make(conn: psycopg.Connection[Any]) -> int:
            [(made,)] = conn.execute(
                "SELECT agentdocket_ensure_partitions(%s::date[])", [wanted]
            ).fetchall()
            return int(made)

        return with_ddl_lock(self._conn, make)

    def month_ops(self) -> MonthOps:
        from agentdocket.store.backends.postgres.months import PostgresMonthOps

        return PostgresMonthOps(self)

    def partition_ddl(self, work: Callable[[Any], T], *partitions: str) -> T:
        return with_ddl_lock(self._conn, work, *partitions)

    def lock_new_traces(self, conn: Any, trace_ids: Sequence[str]) -> bool:
        self._locks.lock(conn, NEW_TRACE_LOCK, trace_ids)
        return True

    def lock_traces(self, conn: Any, trace_ids: Sequence[str]) -> None:
        # Taken after every new-trace lock a transaction takes, and waited for only by
        # transactions past theirs: the two kinds never wait on each other in a circle.
        self._locks.lock(conn, TRACE_LOCK, trace_ids)

    # --- arrival order ------------------------------------------------------------------------

    def arrival_order(self) -> tuple[str, tuple[str, ...]]:
        return "tx::text::int8", ("tx", "position")

    def horizon(self, after_tx: int | None) -> str:
        """SQL of the first transaction a follower may not read yet (reading on from
        ``after_tx``, or for the head): the oldest one still running. Nothing can later be
        committed before a position a follower has passed."""
        return HORIZON

    def arrived_after(self, tx: int, seq: int) -> tuple[str, list[Any]]:
        return f"(tx, position) > (?::text::xid8, ?) AND tx < {self.horizon(tx)}", [str(tx), seq]

    def arrived_by(self, tx: int, seq: int, alias: str) -> tuple[str, list[Any]]:
        return f"({alias}.tx, {alias}.position) <= (?::text::xid8, ?)", [str(tx), seq]

    def readable(self) -> str:
        return f"tx < {self.horizon(None)}"

    def claim_runs(self, key: str, trace_ids: Sequence[str]) -> list[str]:
        # A session advisory lock per (key, run): a killed follower's connection ends, and
        # with it its claims.
        rows = self.read(
            "SELECT t FROM unnest(?::text[]) AS t "
            "WHERE pg_try_advisory_lock(hashtext(?), hashtext(t))",
            [list(trace_ids), key],
        )
        return [r[0] for r in rows]

    def release_runs(self, key: str, trace_ids: Sequence[str]) -> None:
        self.read(
            "SELECT pg_advisory_unlock(hashtext(?), hashtext(t)) FROM unnest(?::text[]) AS t",
            [key, list(trace_ids)],
        )

    def json_text(self, column: str, key: str) -> str:
        return f"{column}->>'{key}'"

    def refresh_dashboards(
        self, progress: Callable[[int, int], None] | None = None
    ) -> Refreshed | None:
        with mapped_errors():
            [(installed,)] = self._conn.execute(
                "SELECT to_regprocedure('agentdocket_refresh_rollups(timestamptz, timestamptz)') "
                "IS NOT NULL"
            ).fetchall()
            # None when the dashboards' layer is not installed (a database opened from Python
            # and never given `agentdocket migrate`): nothing reads rollups there.
            return refresh(self._conn, progress=progress) if installed else None

    def read_on(self, conn: Any, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with mapped_errors(), conn.cursor() as cur:
            cur.execute(query.replace("?", "%s"), list(params))
            return list(cur.fetchall())

    def read_with_names(
        self, query: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        with mapped_errors(), self._conn.cursor() as cur:
            cur.execute(query.replace("?", "%s"), list(params))
            names = [d.name for d in cur.description or []]
            return names, list(cur.fetchall())

    def stream_on(self, conn: Any, query: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        with mapped_errors(), conn.cursor(name=f"agentdocket_{uuid.uuid4().hex[:12]}") as cur:
            cur.itersize = size
            cur.execute(query)
            while rows := cur.fetchmany(size):
                yield rows

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        # Never a prepared statement: psycopg prepares a query after five executions, and the
        # generic plan PostgreSQL then keeps was made while the first big scoring run was
        # filling a table analysed empty: it read every verdict of the version against every
        # run of the batch, seconds per batch (60k runs: 35 s of 42) until autovacuum happened
        # to re-analyse. Planned afresh each time, the probe takes milliseconds.
        if not ids:
            return set()
        with mapped_errors():
            months = sorted(set(self.stored_months(self._conn, ids).values()))
            rows = self._conn.execute(
                VERDICT_KEYS, [scorer, version, list(ids), months], prepare=False
            ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        params: list[Any] = [list(ids), list(months)]
        query = SCORING_EVENTS.format(kinds="" if kinds is None else " AND kind = ANY(%s)")
        if kinds is not None:
            params.append(sorted(kinds))
        loads = stored_loads
        uuid_ = uuid.UUID
        with mapped_errors(), self._conn.cursor() as cur:
            cur.execute(query, params, prepare=False)  # see verdict_keys
            return [
                Event(
                    uuid_(r[0]),
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    EPOCH + timedelta(microseconds=r[5]),
                    r[6],
                    loads(r[8]),
                    r[7],
                )
                for r in cur.fetchall()
            ]

    def execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> int:
        return int(conn.execute(query.replace("?", "%s"), list(params)).rowcount)

    def lock_for_rebuild(self, conn: Any) -> None:
        # Appends wait while the projections are rebuilt; readers carry on.
        conn.execute("LOCK TABLE events IN SHARE MODE")
        conn.execute("LOCK TABLE runs, verdicts, judge_calls IN EXCLUSIVE MODE")

    def to_db(self, column: str, value: Any) -> Any:
        if column in JSON_COLUMNS and value is not None:
            return jsonb(value)
        return value

    def converts(self, column: str) -> bool:
        return column in JSON_COLUMNS

    def from_db(self, column: str, value: Any) -> Any:
        if isinstance(value, str):
            return unescape_text(value) if ESC in value else value
        if isinstance(value, uuid.UUID):
            return str(value)
        if column in TIME_COLUMNS and value is not None:
            return value.astimezone(UTC)
        return value

    # --- bulk writes (.copy) -------------------------------------------------------------------

    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
    ) -> tuple[int, Projection]:
        return copy_events(conn, events, months, payloads, projected, copy_first=self.copy_first)

    def merge(
        self,
        conn: Any,
        table: str,
        columns: Sequence[str],
        key: Sequence[str],
        rows: list[tuple[Any, ...]],
        conflict: str,
        *,
        new: bool = False,
    ) -> None:
        merge_rows(conn, table, columns, key, rows, conflict, copy_first=self.copy_first, new=new)
