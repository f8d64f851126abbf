"""The recorder: what each database supplies, and nothing else.

A small class per backend (``PostgresRecorder``, ``SqliteRecorder`` in
:mod:`agentdocket.store.backends`): its connection, transactions and savepoints,
queries written with ``?`` placeholders, value conversion, the bulk insert of events and the
merge of projection rows, with every driver error mapped into the store's error tree
(:mod:`agentdocket.store.errors`). The parts of the store that do not depend on the database
(appending, projecting, datasets, dead letters, reading) are written against it.

Its protocol is public, and the only way in (no other module calls an underscore member of a
recorder; a test holds it): ``close``, ``ping``, ``connection``; transactions (``write``,
``savepoint``, ``partition_ddl``); queries (``read``, ``read_on``, ``read_with_names``,
``stream_on``, ``dicts``, ``execute``, ``any_of``); values (``to_db``, ``from_db``,
``converts``, ``as_rows``, ``event_of``); the log and its projections (``insert_events``,
``merge``, ``scoring_events``, ``verdict_keys``, ``lock_for_rebuild``); months
(``ensure_partitions``, ``stored_months``, ``lock_new_traces``, ``unique_key``,
``month_ops``); arrival order and claims (``arrival_order``, ``arrived_after``, ``arrived_by``,
``readable``, ``claim_runs``, ``release_runs``); ``json_text``; ``refresh_dashboards``. A new
backend is a subclass, and passes the contract suite (``tests/contract/
test_recorder_contract.py``) by subclassing its abstract test case.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import date
from operator import attrgetter
from typing import Any, TypeVar

import orjson
from sqlalchemy.engine import URL

from agentdocket.events import Event
from agentdocket.store.month_ops import MonthOps
from agentdocket.store.projections import Projection
from agentdocket.store.rollup_refresh import Refreshed

T = TypeVar("T")

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
    # whether the database has the dashboards' rollups (as its Backend record says)
    rollups = False
    least: str  # SQL of the two-argument minimum and maximum
    greatest: str

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

    @abstractmethod
    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the database answers now."""

    # --- months (agentdocket.store.months) ----------------------------------------------------

    def unique_key(self, table: str) -> tuple[str, ...]:
        """The columns that recognise a row of ``events``, ``runs`` or ``verdicts``."""
        return UNIQUE_KEYS[table]

    def ensure_partitions(self, months: set[date]) -> int:
        """Make sure rows of these months have somewhere to go; how many partitions were made
        (none where the database has no partitions). Outside any transaction."""
        return 0

    @abstractmethod
    def month_ops(self) -> MonthOps:
        """Retention's operations on this database's months."""

    def partition_ddl(self, work: Callable[[Any], T], *partitions: str) -> T:
        """``work(conn)`` in a write transaction of its own, holding what making or dropping
        partitions needs (on PostgreSQL the one lock order of
        :mod:`agentdocket.store.backends.postgres.locks`, ``partitions`` locked too; tried
        again while the tables are busy)."""
        with self.write() as conn:
            return work(conn)

    def stored_months(self, conn: Any, trace_ids: Sequence[str]) -> dict[str, date]:
        """The month of each of these traces that has one (``trace_months``: one key probe
        each)."""
        months: dict[str, date] = {}
        for start in range(0, len(trace_ids), 1000):
            where, params = self.any_of("trace_id", list(trace_ids[start : start + 1000]))
            rows = self.read_on(
                conn, f"SELECT trace_id, run_month FROM trace_months WHERE {where}", params
            )
            months.update((t, self.from_db("run_month", m)) for t, m in rows)
        return months

    def keep_months(self, conn: Any, months: dict[str, date]) -> None:
        """Record the months of these traces, new here (``trace_months``); a trace another
        writer recorded meanwhile keeps its own."""
        if months:
            rows = [(t, self.to_db("run_month", m)) for t, m in sorted(months.items())]
            conflict = "ON CONFLICT (trace_id) DO NOTHING"
            columns = ("trace_id", "run_month")
            self.merge(conn, "trace_months", columns, ("trace_id",), rows, conflict)

    def lock_traces(self, conn: Any, trace_ids: Sequence[str]) -> None:
        """Lock these traces' projection rows for a writer's read-then-write until the
        transaction ends (:mod:`agentdocket.store.stale_hours`); nothing to do where one
        writer writes at a time."""
        return None

    def lock_new_traces(self, conn: Any, trace_ids: Sequence[str]) -> bool:
        """Lock these traces, not yet stored, until the transaction ends; whether there are
        such locks (a database with one writer at a time needs none)."""
        return False

    @abstractmethod
    def write(self) -> AbstractContextManager[Any]:
        """A write transaction on a connection (retrying is the caller's)."""

    @abstractmethod
    def savepoint(self, conn: Any) -> AbstractContextManager[None]:
        """A savepoint on ``conn``: rolled back if its body raises, which it raises mapped into
        the store's error tree (a record's encoding error as :class:`RecordRefused`)."""

    @abstractmethod
    def lock_for_rebuild(self, conn: Any) -> None: ...

    # --- arrival order (agentdocket.store.following) --------------------------------------------

    @abstractmethod
    def arrival_order(self) -> tuple[str, tuple[str, ...]]:
        """SQL of an event's transaction (an integer; ``0`` where the position alone is the
        commit order), and the columns that order ``events`` by arrival."""

    @abstractmethod
    def arrived_after(self, tx: int, seq: int) -> tuple[str, list[Any]]:
        """A condition on ``events``: stored after (``tx``, ``seq``), and readable now (no event
        committed later can come before it)."""

    @abstractmethod
    def arrived_by(self, tx: int, seq: int, alias: str) -> tuple[str, list[Any]]:
        """A condition on ``events`` aliased ``alias``: stored at or before (``tx``, ``seq``)."""

    @abstractmethod
    def readable(self) -> str:
        """A condition on ``events``: readable now (no event committed later can come before
        it)."""

    @abstractmethod
    def claim_runs(self, key: str, trace_ids: Sequence[str]) -> list[str]:
        """The runs of ``trace_ids`` this session now holds for ``key`` (none that another
        session holds for it); where one process writes at a time, all of them."""

    @abstractmethod
    def release_runs(self, key: str, trace_ids: Sequence[str]) -> None:
        """Let go of runs :meth:`claim_runs` gave."""

    @abstractmethod
    def json_text(self, column: str, key: str) -> str:
        """SQL of a JSON column's top-level member ``key`` as text."""

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

    @abstractmethod
    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        """The events of these traces (of these kinds; all kinds when None), in trace order;
        ``months``: the runs' months, where their events are."""

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        """(trace id, input hash) of the verdicts this scorer version already gave these runs."""
        if not ids:
            return set()
        where, params = self.any_of("trace_id", ids)
        rows = self.read(
            "SELECT trace_id, input_hash FROM verdicts WHERE scorer = ? AND scorer_version = ? "
            f"AND {where}",
            [scorer, version, *params],
        )
        return {(r[0], r[1]) for r in rows}

    def refresh_dashboards(
        self, progress: Callable[[int, int], None] | None = None
    ) -> Refreshed | None:
        """Bring the dashboards' hourly rollups up to date; None where there are none."""
        return None

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
    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
    ) -> tuple[int, Projection]:
        """Insert events under their traces' ``months``, skipping those already stored; return
        how many were inserted and the projection of those (a backend may compute it while the
        database digests the rows). ``payloads``: each event's payload as the JSON (UTF-8) to
        store, where the caller has it (None: the recorder encodes that one). ``projected``:
        the projection of all of ``events``, where the caller made it (it stands when every
        one of them is new)."""

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
        new: bool = False,
    ) -> None:
        """Insert rows into a projection table; rows whose key exists go through ``conflict``
        (an ``ON CONFLICT ... DO ...`` clause; empty for tables where a clash is an error).
        ``new``: the rows are expected not to exist (keyed by events this transaction
        inserted), so that a backend may skip looking for them first."""

    # --- values -------------------------------------------------------------------------------

    @abstractmethod
    def to_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def from_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def converts(self, column: str) -> bool:
        """Whether values of this column need :meth:`_to_db`."""

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
