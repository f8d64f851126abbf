"""SQLite's recorder: the embedded default. WAL mode, one writer at a time (BEGIN IMMEDIATE);
driver errors mapped into the store's tree by their class and message."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from agentdocket.events import format_ts
from agentdocket.store.errors import RecordRefused, StoreError, StoreUnavailable
from agentdocket.store.escaping import ESC, unescape_text
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.recorder import (
    DATA_ERRORS,
    JSON_COLUMNS,
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


def to_ts(value: datetime) -> str:
    return format_ts(value)


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


class SqliteRecorder(Recorder):
    """SQLite, the embedded default: WAL mode, one writer at a time."""

    dialect = "sqlite"
    least = "min"
    greatest = "max"
    json_member = "json_extract({column}, '$.{key}')"
    float_type = "REAL"
    trace_in_month = "trace_id = ? AND +run_month = ?"  # the unary plus: no index on it

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

    def execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> int:
        return int(conn.execute(query, list(params)).rowcount)

    def to_db(self, column: str, value: Any) -> Any:
        if value is None:
            return None
        if column in JSON_COLUMNS:
            return dumps(value)
        if column in TIME_COLUMNS:
            return to_ts(value)
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
            return parse_ts(value)
        if column in BOOL_COLUMNS:
            return bool(value)
        if column in DATE_COLUMNS:
            return date.fromisoformat(value)
        return value

    def merge(
        self,
        conn: Any,
        table: str,
        columns: Sequence[str],
        key: Sequence[str],
        rows: list[tuple[Any, ...]],
        conflict: str,
        *,
        new: bool | Collection[tuple[Any, ...]] = False,
    ) -> None:
        index = [columns.index(k) for k in key]
        rows = sorted(rows, key=lambda r: tuple(r[i] for i in index))
        conn.executemany(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
            f"{conflict}",
            rows,
        )
