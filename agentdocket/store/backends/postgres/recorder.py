"""PostgreSQL's recorder: psycopg 3, one connection in autocommit mode, each write a
transaction on it; rows merged by binary COPY (:mod:`.copy`). Its roles are in :mod:`.log`,
:mod:`.arrivals`, :mod:`.months` and :mod:`.rollups`."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy.engine import URL

from agentdocket.store.backends.postgres.copy import CLASHES, adapt, jsonb, merge_rows
from agentdocket.store.backends.postgres.errors import classify, mapped_errors
from agentdocket.store.backends.postgres.locks import TraceLocks
from agentdocket.store.errors import RecordRefused
from agentdocket.store.escaping import ESC, unescape_text
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.recorder import DATA_ERRORS, JSON_COLUMNS, TIME_COLUMNS, Recorder
from agentdocket.store.urls import display_url, psycopg_conninfo

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class PostgresRecorder(Recorder):
    """PostgreSQL through psycopg 3: binary COPY for events and projection rows."""

    dialect = "postgresql"
    least = "least"
    greatest = "greatest"
    json_member = "{column}->>'{key}'"
    float_type = "double precision"
    trace_in_month = "trace_id = ? AND run_month = ?"
    # COPY new rows straight in, falling back to the staging table on these errors (a
    # duplicate key); whether a merge may look up which keys are stored first
    clashes: tuple[type[Exception], ...] = CLASHES
    probe_keys = True
    copy_events_first = True  # events too (whose refusals and duplicates are the common ones)
    # COPY events first only where the caller runs the whole transaction again if the COPY
    # fails (CopyFailed), never going on in the transaction after it (Citus)
    copy_events_redone = False

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        # advisory locks on traces this transaction holds (.locks), by the roles that take them
        self.trace_locks = TraceLocks()
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
        self.trace_locks = TraceLocks()  # held until the transaction ends
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

    def read(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.read_on(self._conn, query, params)

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

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def execute(self, conn: Any, query: str, params: Sequence[Any] = ()) -> int:
        return int(conn.execute(query.replace("?", "%s"), list(params)).rowcount)

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
        merge_rows(
            conn,
            table,
            columns,
            key,
            rows,
            conflict,
            clashes=self.clashes,
            probe=self.probe_keys,
            new=new,
        )
