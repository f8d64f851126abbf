"""Appending events: deduplicated, escaped, redacted, inserted with their projections in one
transaction per batch; a record the database refuses is isolated and kept as a dead letter.

The event log only ever receives INSERTs. A re-sent event (same id) adds nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any

from agentdocket.events import Dataset, Event
from agentdocket.store import months as run_months
from agentdocket.store.datasets import Datasets
from agentdocket.store.dead_letters import DeadLetter, DeadLetters
from agentdocket.store.errors import RecordRefused, StoreError, WriteConflict
from agentdocket.store.escaping import escape_json
from agentdocket.store.limits import STORE, Limits, bound_json
from agentdocket.store.projector import Projector
from agentdocket.store.recorder import DATA_ERRORS, Recorder
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.store")

BATCH = 10_000
CONFLICT_RETRIES = 5
Refusals = list[tuple[Event, RecordRefused]]


@dataclass(frozen=True)
class AppendResult:
    inserted: int
    duplicates: int
    refused: int = 0  # kept as dead letters (see :mod:`agentdocket.store.dead_letters`)


class Appender:
    """Writes events, and with them their projections and dead letters."""

    def __init__(
        self,
        db: Recorder,
        projector: Projector,
        datasets: Datasets,
        dead_letters: DeadLetters,
        redactor: Redactor,
        limits: Limits = STORE,
    ) -> None:
        self.db = db
        self.projector = projector
        self.datasets = datasets
        self.dead_letters = dead_letters
        self.redactor = redactor
        self.limits = limits

    def append(
        self, events: Iterable[Event], batch_size: int = BATCH, *, source: str = "append"
    ) -> AppendResult:
        """See :meth:`agentdocket.store.Store.append`."""
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
        # A conflict with a concurrent writer of the same traces (a deadlock) is retried: the
        # batch is idempotent, and the failed transaction left nothing behind.
        for attempt in range(CONFLICT_RETRIES):
            try:
                return self._append_batch_once(events, source)
            except WriteConflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _append_batch_once(self, events: list[Event], source: str) -> tuple[int, int]:
        with self._write_for(events) as (conn, timely, late):
            inserted, refusals = self.append_on(conn, timely)
            refusals = late + refusals
            if refusals:
                letters = [DeadLetter.of_event(e, exc, source) for e, exc in refusals]
                self.dead_letters.keep_on(conn, letters)
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

    def append_strict(self, events: list[Event]) -> int:
        """Append, raising :class:`RecordRefused` (naming the event) instead of keeping a dead
        letter; nothing is written then."""
        with self._write_for(events) as (conn, timely, late):
            inserted, refusals = self.append_on(conn, timely)
            if late or refusals:
                event, exc = (late + refusals)[0]
                raise exc.about(str(event.event_id))
            return inserted

    def import_all(
        self, datasets: Sequence[Dataset], events: Sequence[Event], batch_size: int = BATCH
    ) -> AppendResult:
        """See :meth:`agentdocket.store.Store.import_all`."""
        with self._write_for(events) as (conn, timely, late):
            if late:
                event, exc = late[0]
                raise exc.about(str(event.event_id))
            for dataset in datasets:
                self.datasets.register_on(conn, dataset)
            inserted = 0
            for start in range(0, len(timely), batch_size):
                n, refusals = self.append_on(conn, timely[start : start + batch_size])
                if refusals:
                    event, exc = refusals[0]
                    raise exc.about(str(event.event_id))
                inserted += n
        return AppendResult(inserted, len(events) - inserted)

    @contextmanager
    def _write_for(self, events: Sequence[Event]) -> Iterator[tuple[Any, list[Event], Refusals]]:
        """A write transaction for ``events``: the connection, the events inside the time
        window, and those outside it refused. The timely events' months get their partitions
        first (DDL never runs inside a batch's transaction); the others' never do."""
        timely, late = self._in_time(events)
        self.db.ensure_partitions(run_months.needed(timely))
        with self.db.write() as conn:
            yield conn, timely, late

    def _in_time(self, events: Sequence[Event]) -> tuple[list[Event], Refusals]:
        """``events`` inside the limits' time window, and those outside it refused with why
        (all of them inside where the limits bound no time)."""
        if self.limits.max_age is None and self.limits.max_ahead is None:
            return list(events), []
        now = datetime.now(UTC)
        timely: list[Event] = []
        late: Refusals = []
        for event in events:
            why = self.limits.untimely(event.ts, now)
            if why is None:
                timely.append(event)
            else:
                late.append((event, RecordRefused(why, code="time_window")))
        return timely, late

    def append_on(self, conn: Any, events: list[Event]) -> tuple[int, Refusals]:
        """Insert and project ``events`` on ``conn``: how many were new, and the events the
        database refused (everything else is written)."""
        unique = list({e.event_id: e for e in events}.values())
        prepared, refusals = self._prepare(unique)
        months = run_months.assign(self.db, conn, prepared) if prepared else {}
        inserted, refused = self._insert_isolating(conn, prepared, months)
        return inserted, refusals + refused

    def _prepare(self, events: list[Event]) -> tuple[list[Event], Refusals]:
        """Events as they are written: within the limits (:mod:`agentdocket.store.limits`),
        escaped (:mod:`agentdocket.store.escaping`), then redacted. An event that cannot be
        prepared (an error of its data's making, never the database's) is refused."""
        try:
            return [self._prepared(e) for e in events], []
        except DATA_ERRORS:
            pass
        prepared, refused = [], []
        for event in events:
            try:
                prepared.append(self._prepared(event))
            except DATA_ERRORS as exc:
                refused.append((event, RecordRefused(f"{type(exc).__name__}: {exc}")))
        return prepared, refused

    def _prepared(self, event: Event) -> Event:
        # one serialisation of the payload serves the three probes: the limits', escaping's
        # and redaction's
        payload, raw = bound_json(event.payload, self.limits)
        payload, text = escape_json(payload, raw)
        if payload is not event.payload:
            event = replace(event, payload=payload)
        return self.redactor.event(event, text) if self.redactor.active else event

    def _insert_isolating(
        self, conn: Any, events: list[Event], months: dict[str, date]
    ) -> tuple[int, Refusals]:
        """Insert and project ``events`` in a savepoint. If the database refuses the batch, or
        our own code fails on some record of it (projecting it, say), halve it until the
        refused events stand alone (about three times the work of one insert for one bad event
        in a batch), so that all the others are written. This is the one place a record is
        isolated: every writer (the receiver's sink, imports, retries) comes through it."""
        if not events:
            return 0, []
        try:
            with self.db.savepoint(conn):
                inserted, projection = self.db.insert_events(conn, events, months)
                self.projector.apply(conn, projection, months)
            return inserted, []
        except RecordRefused as exc:
            refusal = exc
        except StoreError:
            raise  # the database is away or cannot work: not a record's fault
        except Exception as exc:  # a fault of ours on some record: it must not hold the rest
            refusal = RecordRefused(f"{type(exc).__name__}: {exc}", code="internal")
            if len(events) == 1:
                log.error("agentdocket: event %s failed", events[0].event_id, exc_info=exc)
        if len(events) == 1:
            return 0, [(events[0], refusal.about(str(events[0].event_id)))]
        middle = len(events) // 2
        first, refused_first = self._insert_isolating(conn, events[:middle], months)
        second, refused_second = self._insert_isolating(conn, events[middle:], months)
        return first + second, refused_first + refused_second
