"""The store: the one place that reads and writes agentdocket's database.

``Store`` holds what both databases share (the public API, the projection upserts, reading
traces); ``PostgresStore`` and ``SqliteStore`` supply connections, value conversion and the bulk
insert of events. The event log only ever receives INSERTs; projections are upserted in the same
transaction as the events that change them, so they are always current.
"""

from __future__ import annotations

import logging
import uuid
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from operator import attrgetter
from typing import Any

import orjson

from agentdocket.events import Case, Dataset, Event, Trace
from agentdocket.store.dead_letters import DeadLetter, DeadLetterStore
from agentdocket.store.errors import RecordRefused, StoreError
from agentdocket.store.escaping import escape
from agentdocket.store.projections import (
    JUDGE_CALL_COLUMNS,
    RUN_COLUMNS,
    RUN_COUNTS,
    RUN_IDENTITY,
    VERDICT_COLUMNS,
    Projection,
    project,
)
from agentdocket.store.reading import ScoringStore
from agentdocket.store.redaction import Redactor
from agentdocket.store.rollups import Refreshed

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
JSON_COLUMNS = frozenset({"models", "attributes", "details", "payload", "data"})
TIME_COLUMNS = frozenset(
    {"ts", "started_at", "ended_at", "first_ts", "last_ts", "created_at", "received_at"}
)
BATCH = 10_000


@dataclass(frozen=True)
class AppendResult:
    inserted: int
    duplicates: int
    refused: int = 0  # kept as dead letters (see :mod:`agentdocket.store.dead_letters`)


@dataclass(frozen=True)
class StoredRun:
    """A run's events as stored, in trace order, with its dataset and case."""

    trace_id: str
    events: list[Event]
    case: Case | None
    dataset: str | None
    dataset_version: str | None


# Errors of Python's own making while a record is encoded for the database (an integer past 64
# bits, a value no JSON encoder takes): the record's fault, like a value the database refuses.
DATA_ERRORS = (TypeError, ValueError, OverflowError)


def dumps(value: Any) -> str:
    """Compact JSON text (UTF-8, no NaN)."""
    return orjson.dumps(value).decode()


def _upsert_runs_clause(least: str, greatest: str) -> str:
    sets = [f"{c} = coalesce(runs.{c}, excluded.{c})" for c in RUN_IDENTITY]
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
    return "ON CONFLICT (trace_id) DO UPDATE SET " + ", ".join(sets)


log = logging.getLogger("agentdocket.store")


def _escaped(event: Event) -> Event:
    payload = escape(event.payload)
    return event if payload is event.payload else replace(event, payload=payload)


class Store(ScoringStore, DeadLetterStore, ABC):
    """Append events, register datasets, read traces and projections."""

    dialect: str
    least: str
    greatest: str

    def __init__(self, url: str, redactor: Redactor | None = None) -> None:
        self.url = url
        # Applied to every event and case before it is written (AGENTDOCKET_REDACT by default).
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.runs_upsert = _upsert_runs_clause(self.least, self.greatest)

    # --- connection and value conversion, per database (more in DatasetStore) ---------------

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def ping(self) -> None:
        """Raise :class:`StoreUnavailable` unless the database answers now."""

    @abstractmethod
    def _insert_events(self, conn: Any, events: Sequence[Event]) -> tuple[int, Projection]:
        """Insert events, skipping those already stored; return how many were inserted and the
        projection of those (a backend may compute it while the database digests the rows)."""

    @abstractmethod
    def _lock_for_rebuild(self, conn: Any) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- appending ----------------------------------------------------------------------------

    def append(
        self, events: Iterable[Event], batch_size: int = BATCH, *, source: str = "append"
    ) -> AppendResult:
        """Append events; re-sent events (same id) are ignored. Each batch is one transaction.

        An event the database refuses (:class:`RecordRefused`) does not fail its batch: it is
        isolated, kept as a dead letter naming ``source``, and the rest is stored. Raises
        :class:`StoreUnavailable` when the database is away (nothing of the batch is written).
        """
        inserted = duplicates = refused = 0
        batch: list[Event] = []
        for event in events:
            batch.append(event)
            if len(batch) >= batch_size:
                n, r = self._append_batch(batch, source)
                inserted, duplicates, refused = (
                    inserted + n,
                    duplicates + len(batch) - n - r,
                    refused + r,
                )
                batch = []
        if batch:
            n, r = self._append_batch(batch, source)
            inserted, duplicates, refused = (
                inserted + n,
                duplicates + len(batch) - n - r,
                refused + r,
            )
        return AppendResult(inserted, duplicates, refused)

    def _append_batch(self, events: list[Event], source: str) -> tuple[int, int]:
        with self._write() as conn:
            inserted, refusals = self._append_on(conn, events)
            if refusals:
                letters = [DeadLetter.of_event(e, exc, source) for e, exc in refusals]
                self._keep_dead_letters_on(conn, letters)
                for e, exc in refusals:
                    log.warning(
                        "agentdocket: event %s of trace %s (from %s) refused and kept as a dead "
                        "letter: %s",
                        e.event_id,
                        e.trace_id,
                        source,
                        exc,
                    )
            return inserted, len(refusals)

    def _append_strict(self, events: list[Event]) -> int:
        with self._write() as conn:
            inserted, refusals = self._append_on(conn, events)
            if refusals:
                event, exc = refusals[0]
                raise exc.about(str(event.event_id))
            return inserted

    def _append_on(
        self, conn: Any, events: list[Event]
    ) -> tuple[int, list[tuple[Event, RecordRefused]]]:
        """Insert and project ``events`` on ``conn``: how many were new, and the events the
        database refused (everything else is written)."""
        unique = list({e.event_id: e for e in events}.values())
        prepared, refusals = self._prepare(unique)
        inserted, refused = self._insert_isolating(conn, prepared)
        return inserted, refusals + refused

    def _prepare(
        self, events: list[Event]
    ) -> tuple[list[Event], list[tuple[Event, RecordRefused]]]:
        """Events as they are written: escaped (:mod:`agentdocket.store.escaping`), then
        redacted. An event that cannot be prepared is refused."""
        try:
            return self.redactor.events([_escaped(e) for e in events]), []
        except DATA_ERRORS:
            pass
        prepared, refused = [], []
        for event in events:
            try:
                prepared.extend(self.redactor.events([_escaped(event)]))
            except DATA_ERRORS as exc:
                refused.append((event, RecordRefused(f"{type(exc).__name__}: {exc}")))
        return prepared, refused

    def _insert_isolating(
        self, conn: Any, events: list[Event]
    ) -> tuple[int, list[tuple[Event, RecordRefused]]]:
        """Insert and project ``events`` in a savepoint. If the database refuses the batch,
        halve it until the refused events stand alone (about three times the work of one
        insert for one bad event in a batch), so that all the others are written."""
        if not events:
            return 0, []
        try:
            with self._savepoint(conn):
                inserted, projection = self._insert_events(conn, events)
                self._apply(conn, projection)
            return inserted, []
        except RecordRefused as exc:
            if len(events) == 1:
                return 0, [(events[0], exc.about(str(events[0].event_id)))]
        middle = len(events) // 2
        first, refused_first = self._insert_isolating(conn, events[:middle])
        second, refused_second = self._insert_isolating(conn, events[middle:])
        return first + second, refused_first + refused_second

    @abstractmethod
    def _savepoint(self, conn: Any) -> AbstractContextManager[None]:
        """A savepoint on ``conn``: rolled back if its body raises, which it raises mapped into
        the store's error tree (a record's encoding error as :class:`RecordRefused`)."""

    def import_all(
        self, datasets: Sequence[Dataset], events: Sequence[Event], batch_size: int = BATCH
    ) -> AppendResult:
        """Register datasets and append events in one transaction: all of it or nothing.
        An event the database refuses fails the whole import with :class:`RecordRefused`
        naming it (the caller knows where it came from)."""
        with self._write() as conn:
            for dataset in datasets:
                self._register_on(conn, dataset)
            inserted = 0
            for start in range(0, len(events), batch_size):
                n, refusals = self._append_on(conn, list(events[start : start + batch_size]))
                if refusals:
                    event, exc = refusals[0]
                    raise exc.about(str(event.event_id))
                inserted += n
        return AppendResult(inserted, len(events) - inserted)

    def _apply(self, conn: Any, proj: Projection) -> None:
        if proj.runs:
            rows = self._rows(RUN_COLUMNS, proj.runs.values())
            self._merge(conn, "runs", RUN_COLUMNS, ("trace_id",), rows, self.runs_upsert)
        # Rows keyed by their event (a verdict) or by a cache key whose first reply stays:
        # inserted once, never changed.
        for objects, table, columns, key in (
            (proj.verdicts, "verdicts", VERDICT_COLUMNS, "verdict_id"),
            (proj.judge_calls, "judge_calls", JUDGE_CALL_COLUMNS, "cache_key"),
        ):
            if objects:
                rows = self._rows(columns, objects)
                conflict = f"ON CONFLICT ({key}) DO NOTHING"
                self._merge(conn, table, columns, (key,), rows, conflict)

    def _rows(self, columns: Sequence[str], objects: Iterable[Any]) -> list[tuple[Any, ...]]:
        """Projection objects as database rows (only the columns that need it are converted)."""
        get = attrgetter(*columns)
        convert = [(i, c) for i, c in enumerate(columns) if self._converts(c)]
        out = []
        for obj in objects:
            row = list(get(obj))
            for i, c in convert:
                row[i] = self._to_db(c, row[i])
            out.append(tuple(row))
        return out

    @abstractmethod
    def _converts(self, column: str) -> bool:
        """Whether values of this column need :meth:`_to_db`."""

    # --- projections --------------------------------------------------------------------------

    def rebuild(self, batch_size: int = BATCH) -> dict[str, int]:
        """Drop the projections and replay the whole event log into them, in one transaction."""
        with self._write() as conn:
            self._lock_for_rebuild(conn)
            for table in ("verdicts", "runs", "judge_calls"):
                self._execute(conn, f"DELETE FROM {table}")
            count = 0
            for chunk in self._stream_events(conn, batch_size):
                self._apply(conn, project(chunk))
                count += len(chunk)
        return {"events": count, **self.counts()}

    def refresh_dashboards(
        self, progress: Callable[[int, int], None] | None = None
    ) -> Refreshed | None:
        """Bring the dashboards' hourly rollups up to date (see
        :mod:`agentdocket.store.rollups`); None where there are none (SQLite).
        ``progress(done, total)`` counts stale hours."""
        return None

    def _stream_events(self, conn: Any, size: int) -> Iterator[list[Event]]:
        sql = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events ORDER BY trace_id, seq, event_id"
        for rows in self._stream_on(conn, sql, size):
            yield [self._event(r) for r in rows]

    @abstractmethod
    def _stream_on(self, conn: Any, sql: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        """Stream a query's rows on a given (write) connection."""

    def counts(self) -> dict[str, int]:
        out = {}
        for table in ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"):
            out[table] = int(self._read(f"SELECT count(*) FROM {table}")[0][0])
        return out

    def rows(self, table: str, order_by: str) -> list[dict[str, Any]]:
        """All rows of a projection or reference table, decoded, in a stable order."""
        allowed = {
            "runs",
            "steps",
            "verdicts",
            "verdicts_latest",
            "judge_calls",
            "datasets",
            "cases",
            "events",
        }
        if table not in allowed:
            raise StoreError(f"unknown table {table!r}")
        return [dict(r) for r in self._dicts(f"SELECT * FROM {table} ORDER BY {order_by}")]

    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        names, data = self._read_with_names(sql, params)
        for r in data:
            yield {n: self._from_db(n, v) for n, v in zip(names, r, strict=True)}

    @abstractmethod
    def _read_with_names(
        self, sql: str, params: Sequence[Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]: ...

    # --- events and traces --------------------------------------------------------------------

    def _event(self, row: Sequence[Any]) -> Event:
        values = {c: self._from_db(c, v) for c, v in zip(EVENT_COLUMNS, row, strict=True)}
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

    def events(self, trace_id: str) -> list[Event]:
        """The stored events of one trace, as stored (not upcast), in trace order."""
        sql = (
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE trace_id = ? "
            "ORDER BY seq, ts, event_id"
        )
        return [self._event(r) for r in self._read(sql, (trace_id,))]

    def read_trace(self, trace_id: str) -> Trace | None:
        events = self.events(trace_id)
        if not events:
            return None
        found = self._cases_for([run]) if (run := self.run(trace_id)) else {}
        return Trace.from_events(events, found[trace_id][1] if trace_id in found else None)

    def iter_traces(
        self,
        *,
        dataset: str | None = None,
        trace_ids: Sequence[str] | None = None,
        batch_size: int = 1000,
    ) -> Iterator[list[Trace]]:
        """Whole traces in batches, each with its case, ordered by start time then trace id
        (the scorers' bulk reader, reading every event kind)."""
        yield from self.scoring_batches(
            kinds=None, dataset=dataset, trace_ids=trace_ids, batch_size=batch_size
        )

    def _events_of(self, ids: Sequence[str]) -> dict[str, list[Event]]:
        """Stored events of several traces, each list in trace order."""
        by_trace: dict[str, list[Event]] = defaultdict(list)
        marks = ", ".join("?" for _ in ids)
        sql = (
            f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE trace_id IN ({marks}) "
            "ORDER BY trace_id, seq, ts, event_id"
        )
        for row in self._read(sql, ids):
            event = self._event(row)
            by_trace[event.trace_id].append(event)
        return by_trace

    def _runs_and_cases(
        self, ids: Sequence[str]
    ) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, Case]]]:
        """Run rows of the traces, and for each run with a case: (dataset version, case)."""
        marks = ", ".join("?" for _ in ids)
        runs = {
            r["trace_id"]: r
            for r in self._dicts(f"SELECT * FROM runs WHERE trace_id IN ({marks})", ids)
        }
        return runs, self._cases_for(list(runs.values()))

    def stored_runs(
        self, *, dataset: str | None = None, batch_size: int = 1000
    ) -> Iterator[StoredRun]:
        """Every run (of ``dataset``) with its events as stored (not upcast) and its case, in
        order of first event, read a batch at a time: what an export writes."""
        ids = self.trace_ids(dataset=dataset)
        for start in range(0, len(ids), batch_size):
            chunk = ids[start : start + batch_size]
            events = self._events_of(chunk)
            runs, cases = self._runs_and_cases(chunk)
            for tid in chunk:
                run = runs.get(tid, {})
                version, case = cases.get(tid, (None, None))
                yield StoredRun(tid, events[tid], case, run.get("dataset"), version)

    def trace_ids(
        self, *, dataset: str | None = None, agent: str | None = None, since: datetime | None = None
    ) -> list[str]:
        where, params = self._run_filter(dataset=dataset, agent=agent, since=since)
        sql = f"SELECT trace_id FROM runs {where} ORDER BY first_ts, trace_id"
        return [r[0] for r in self._read(sql, params)]

    def _run_filter(
        self, *, dataset: str | None, agent: str | None, since: datetime | None
    ) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if dataset is not None:
            clauses.append("dataset = ?")
            params.append(dataset)
        if agent is not None:
            clauses.append("agent = ?")
            params.append(agent)
        if since is not None:
            clauses.append("first_ts >= ?")
            params.append(self._to_db("ts", since))
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params

    def run(self, trace_id: str) -> dict[str, Any] | None:
        found = list(self._dicts("SELECT * FROM runs WHERE trace_id = ?", (trace_id,)))
        return found[0] if found else None

    def list_runs(
        self, *, dataset: str | None = None, agent: str | None = None, limit: int | None = 50
    ) -> list[dict[str, Any]]:
        """Runs, newest first."""
        where, params = self._run_filter(dataset=dataset, agent=agent, since=None)
        sql = f"SELECT * FROM runs {where} ORDER BY first_ts DESC, trace_id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return list(self._dicts(sql, params))

    def find_runs(self, prefix: str) -> list[str]:
        """Trace ids of the runs whose id starts with ``prefix`` (abbreviated ids on the command
        line)."""
        rows = self._read(
            "SELECT trace_id FROM runs WHERE trace_id LIKE ? ORDER BY trace_id LIMIT 10",
            (prefix.lower() + "%",),
        )
        return [r[0] for r in rows]
