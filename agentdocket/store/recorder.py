"""The recorder: the core of what each database supplies.

A small class per backend (``PostgresRecorder``, ``SqliteRecorder`` in
:mod:`agentdocket.store.backends`): its connection, transactions and savepoints, queries
written with ``?`` placeholders, the merge of rows into a table, value conversion, with every
driver error mapped into the store's error tree (:mod:`agentdocket.store.errors`). What only
some parts of the store need (the event log, arrival order, months, rollups) are roles of
their own over it (:mod:`agentdocket.store.roles`).

Its protocol is public, and the only way in (no other module calls an underscore member of a
recorder; a test holds it): ``close``, ``ping``, ``connection``; transactions (``write``,
``savepoint``); queries (``read``, ``read_on``, ``read_with_names``, ``stream_on``,
``read_among``, ``dicts``, ``any_of``, ``json_text``); writes (``execute``, ``merge``);
values (``to_db``, ``from_db``, ``converts``, ``as_rows``, ``event_of``). A new backend is a
subclass, and passes the contract suite (``tests/contract/roles/test_recorder.py``) by
subclassing its abstract test case.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from operator import attrgetter
from typing import Any

import orjson
from sqlalchemy.engine import URL

from agentdocket.events import Event

EVENT_COLUMNS = (
    "event_id",
    "trace_id",
    "span_id",
    "parent_span_id",
    "seq",
    "ts",
    "kind",
    "schema_version",
    "payload",
)
# What the event log stores of an event: the event, and the month of its run
# (:mod:`agentdocket.store.months`).
STORED_EVENT_COLUMNS = (*EVENT_COLUMNS, "run_month")
# The keys that recognise a stored row (ON CONFLICT targets), where no partition key joins them.
UNIQUE_KEYS = {
    "events": ("trace_id", "event_id"),
    "runs": ("trace_id",),
    "verdicts": ("verdict_id",),
}
JSON_COLUMNS = frozenset(
    {"models", "attributes", "details", "payload", "data", "definition", "rubrics", "selection"}
)
TIME_COLUMNS = frozenset(
    {
        "ts",
        "started_at",
        "ended_at",
        "first_ts",
        "last_ts",
        "created_at",
        "received_at",
        "updated_at",  # scoring_cursors
        "at",  # pipeline_samples, scoring_samples
        "claimed_at",  # queue_claims
    }
)
AMONG_CHUNK = 500  # the values of one "is one of" condition in a statement (read_among)
# Errors of Python's own making while a record is encoded for the database (an integer past 64
# bits, a value no JSON encoder takes, nesting past the interpreter's recursion limit): the
# record's fault, like a value the database refuses.
DATA_ERRORS = (TypeError, ValueError, OverflowError, RecursionError)


def dumps(value: Any) -> str:
    """Compact JSON text (UTF-8, no NaN)."""
    return orjson.dumps(value).decode()


class Recorder(ABC):
    """One database's connection and primitives."""

    dialect: str
    least: str  # SQL of the two-argument minimum and maximum
    greatest: str
    # SQL of a JSON column's top-level member as text, with ``{column}`` and ``{key}``
    json_member: str
    # the SQL type a number read from JSON is cast to, to compare or sort it
    float_type: str
    # SQL of "one trace's rows in its month" (parameters: trace id, month), to read one trace
    # in parts: where the month reads one partition (PostgreSQL), or where it is left to
    # filter by, so that the rows are read along their key and not through the month's index
    # one lookup at a time (SQLite: twice as slow on a trace of 100,000 rows)
    trace_in_month: str

    def __init__(self, url: URL) -> None:
        # the URL as parsed and checked by its backend, for opening the database again
        self.url = url.render_as_string(hide_password=False)

    # --- connection ---------------------------------------------------------------------------

    @abstractmethod
    def close(self) -> None: ...

    @property
    @abstractmethod
    def connection(self) -> Any:
        """The driver's connection itself, for what needs the backend as it is (a tool, a test
        recording the store's statements)."""

    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the database answers now."""
        self.read("SELECT 1")

    # --- transactions -------------------------------------------------------------------------

    @abstractmethod
    def write(self) -> AbstractContextManager[Any]:
        """A write transaction on a connection (retrying is the caller's)."""

    @abstractmethod
    def savepoint(self, conn: Any) -> AbstractContextManager[None]:
        """A savepoint on ``conn``: rolled back if its body raises, which it raises mapped into
        the store's error tree (a record's encoding error as :class:`RecordRefused`)."""

    # --- reading ------------------------------------------------------------------------------

    @abstractmethod
    def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only query written with ``?`` placeholders."""

    @abstractmethod
    def read_on(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def read_with_names(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]: ...

    @abstractmethod
    def stream_on(self, conn: Any, sql: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        """Stream a query's rows on a given (write) connection."""

    @abstractmethod
    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """A condition "``column`` is one of ``values``" and its parameters."""

    def json_text(self, column: str, key: str) -> str:
        """SQL of a JSON column's top-level member ``key`` as text."""
        return self.json_member.format(column=column, key=key)

    def read_among(
        self,
        sql: str,
        column: str,
        values: Sequence[Any],
        params: Sequence[Any] = (),
        size: int = AMONG_CHUNK,
    ) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` where ``column`` is one of ``values``, asked ``size`` values at
        a time (SQLite binds at most 32,766 parameters): ``{among}`` in ``sql`` stands for
        that condition, ``params`` for the parameters before it."""
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(values), size):
            where, more = self.any_of(column, values[start : start + size])
            rows += self.read(sql.replace("{among}", where), [*params, *more])
        return rows

    def dicts(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        names, data = self.read_with_names(sql, params)
        for r in data:
            yield {n: self.from_db(n, v) for n, v in zip(names, r, strict=True)}

    def event_of(self, row: Sequence[Any]) -> Event:
        values = {c: self.from_db(c, v) for c, v in zip(EVENT_COLUMNS, row, strict=True)}
        return Event(
            event_id=uuid.UUID(str(values["event_id"])),
            trace_id=values["trace_id"],
            span_id=values["span_id"],
            parent_span_id=values["parent_span_id"],
            seq=int(values["seq"]),
            ts=values["ts"],
            kind=values["kind"],
            payload=values["payload"],
            schema_version=int(values["schema_version"]),
        )

    # --- writing ------------------------------------------------------------------------------

    @abstractmethod
    def execute(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement on ``conn``; how many rows it touched."""

    @abstractmethod
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
        """Insert rows into a table; rows whose key exists go through ``conflict`` (an
        ``ON CONFLICT ... DO ...`` clause; empty for tables where a clash is an error).
        ``new``: the rows are expected not to exist (keyed by events this transaction
        inserted), or the keys of those expected not to (traces new in this batch), so that
        a backend may skip looking for them first."""

    # --- values -------------------------------------------------------------------------------

    @abstractmethod
    def to_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def from_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def converts(self, column: str) -> bool:
        """Whether values of this column need :meth:`to_db`."""

    def as_rows(self, columns: Sequence[str], objects: Iterable[Any]) -> list[tuple[Any, ...]]:
        """Objects as database rows (only the columns that need it are converted)."""
        get = attrgetter(*columns)
        convert = [(i, c) for i, c in enumerate(columns) if self.converts(c)]
        out = []
        for obj in objects:
            row = list(get(obj))
            for i, c in convert:
                row[i] = self.to_db(c, row[i])
            out.append(tuple(row))
        return out
