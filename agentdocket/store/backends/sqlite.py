"""SQLite recorder: the embedded default. WAL mode, one writer at a time (BEGIN IMMEDIATE)."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from agentdocket.events import Event, format_ts
from agentdocket.store.errors import RecordRefused, StoreError, StoreUnavailable
from agentdocket.store.escaping import ESC, unescape_text
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.month_ops import Month, MonthOps
from agentdocket.store.projections import Projection, project
from agentdocket.store.recorder import (
    DATA_ERRORS,
    EVENT_COLUMNS,
    JSON_COLUMNS,
    STORED_EVENT_COLUMNS,
    TIME_COLUMNS,
    Recorder,
    dumps,
)

BOOL_COLUMNS = frozenset({"passed", "show_verdicts", "judge"})
DATE_COLUMNS = frozenset({"run_month"})  # ISO dates as text
# sqlite3 has no error codes worth mapping by number in Python 3.11; its messages tell.
TRANSIENT_MESSAGES = ("locked", "busy", "disk i/o", "unable to open", "disk is full")
CLOSED = "closed database"


def classify(exc: sqlite3.Error) -> StoreError:
    """An sqlite3 error as the store's error (see :mod:`agentdocket.store.errors`)."""
    message = str(exc) or type(exc).__name__
    code = type(exc).__name__
    if isinstance(exc, sqlite3.IntegrityError | sqlite3.DataError):
        return RecordRefused(message, code=code)  # a constraint, or RAISE(ABORT) in a trigger
    if isinstance(exc, sqlite3.OperationalError) and any(
        m in message.lower() for m in TRANSIENT_MESSAGES
    ):
        return StoreUnavailable(message, code=code)
    if isinstance(exc, sqlite3.ProgrammingError) and CLOSED in message.lower():
        return StoreUnavailable(message, code=code)  # as a closed connection is on PostgreSQL
    return StoreError(message, code=code)


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Raise sqlite3's errors as the store's."""
    try:
        yield
    except sqlite3.Error as exc:
        raise classify(exc) from exc


CHUNK = 500  # bound parameters per IN (...) lookup


def _ts(value: datetime) -> str:
    return format_ts(value)


def _parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


class SqliteRecorder(Recorder):
    """SQLite, the embedded default: WAL mode, one writer at a time."""

    dialect = "sqlite"
    least = "min"
    greatest = "max"

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        assert url.database  # the backend's URL check refuses a URL without a file
        self.path = Path(url.database)
        with mapped_errors():
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, timeout=60, check_same_thread=False
            )
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA busy_timeout=60000")
        self._savepoints = 0

    @property
    def connection(self) -> Any:
        """The sqlite3 connection itself, for what needs the backend as it is (a tool, a test
        recording the store's statements); the store's own work goes through the methods."""
        return self._conn

    def close(self) -> None:
        self._conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        # BEGIN IMMEDIATE takes the write lock up front, so the read-then-insert of a batch
        # cannot interleave with another writer's.
        with mapped_errors():
            for attempt in range(100):
                try:
                    self._conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 99:
                        raise
                    time.sleep(0.05)
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")

    @contextmanager
    def savepoint(self, conn: Any) -> Iterator[None]:
        self._savepoints += 1
        name = f"agentdocket_{self._savepoints}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException as exc:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            if isinstance(exc, sqlite3.Error):
                raise classify(exc) from exc
            if isinstance(exc, DATA_ERRORS):
                raise RecordRefused(f"{type(exc).__name__}: {exc}") from exc
            raise
        else:
            conn.execute(f"RELEASE {name}")

    def ping(self) -> None:
        with mapped_errors():
            self._conn.execute("SELECT 1")

    def month_ops(self) -> MonthOps:
        return SqliteMonthOps(self)

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

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with mapped_errors():
            return self._conn.execute(query, list(params)).fetchall()

    def read_on(self, conn: Any, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with mapped_errors():
            rows: list[tuple[Any, ...]] = conn.execute(query, list(params)).fetchall()
        return rows

    def read_with_names(
        self, query: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        with mapped_errors():
            cur = self._conn.execute(query, list(params))
            names = [d[0] for d in cur.description or []]
            return names, cur.fetchall()

    def stream_on(self, conn: Any, query: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        # Materialised first: the same connection then writes the projections.
        with mapped_errors():
            rows = conn.execute(query).fetchall()
        for start in range(0, len(rows), size):
            yield rows[start : start + size]

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        # SQLite binds up to 32766 parameters; batches stay well below that
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        # one table: the months narrow nothing here
        where, params = self.any_of("trace_id", ids)
        if kinds is not None:
            kinds_where, kinds_params = self.any_of("kind", sorted(kinds))
            where += f" AND {kinds_where}"
            params += kinds_params
        with mapped_errors():
            rows = self._conn.execute(
                f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE {where} "
                "ORDER BY trace_id, seq, ts, event_id",
                params,
            ).fetchall()
        loads = stored_loads
        return [
            Event(uuid.UUID(r[0]), r[1], r[2], r[3], r[4], _parse_ts(r[5]), r[6], loads(r[8]), r[7])
            for r in rows
        ]

    def execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> int:
        return int(conn.execute(query, list(params)).rowcount)

    def lock_for_rebuild(self, conn: Any) -> None:
        pass  # BEGIN IMMEDIATE already excludes other writers

    def to_db(self, column: str, value: Any) -> Any:
        if value is None:
            return None
        if column in JSON_COLUMNS:
            return dumps(value)
        if column in TIME_COLUMNS:
            return _ts(value)
        if column in BOOL_COLUMNS:
            return int(value)
        if column in DATE_COLUMNS:
            return value.isoformat()
        return value

    def converts(self, column: str) -> bool:
        return (
            column in JSON_COLUMNS
            or column in TIME_COLUMNS
            or column in BOOL_COLUMNS
            or column in DATE_COLUMNS
        )

    def from_db(self, column: str, value: Any) -> Any:
        if value is None:
            return None
        if column in JSON_COLUMNS:
            return stored_loads(value)
        if isinstance(value, str) and ESC in value:
            return unescape_text(value)
        if column in TIME_COLUMNS:
            return _parse_ts(value)
        if column in BOOL_COLUMNS:
            return bool(value)
        if column in DATE_COLUMNS:
            return date.fromisoformat(value)
        return value

    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
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
        received = _ts(datetime.now(UTC))
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
                    _ts(e.ts),
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
        index = [columns.index(k) for k in key]
        rows = sorted(rows, key=lambda r: tuple(r[i] for i in index))
        conn.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"{conflict}",
            rows,
        )


SQLITE_NO_DELETE = (
    "CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, "
    "'agentdocket: DELETE on table events refused: it is append-only'); END"
)


class SqliteMonthOps(MonthOps):
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
