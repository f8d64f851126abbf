"""Appending events: deduplicated, escaped, redacted, inserted with their projections in one
transaction per batch; a record the database refuses is isolated and kept as a dead letter.

The event log only ever receives INSERTs. A re-sent event (same id) adds nothing.
"""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from typing import Any

from agentdocket.events import Dataset, Event
from agentdocket.store import months as run_months
from agentdocket.store.datasets import Datasets
from agentdocket.store.dead_letters import DeadLetter, DeadLetters
from agentdocket.store.errors import CopyFailed, RecordRefused, StoreError, WriteConflict
from agentdocket.store.escaping import escape_json
from agentdocket.store.limits import STORE, Limits, bound_json
from agentdocket.store.projections import Projection, project
from agentdocket.store.projector import Projector
from agentdocket.store.recorder import DATA_ERRORS, Recorder
from agentdocket.store.redaction import Redactor
from agentdocket.store.roles import EventLog, Months

log = logging.getLogger("agentdocket.store")

BATCH = 10_000
CONFLICT_RETRIES = 5
Refusals = list[tuple[Event, RecordRefused]]
# A prepared payload's JSON as it is stored, by event id, where preparing it wrote that.
Encoded = dict[uuid.UUID, bytes]
# An event bound and escaped, with its payload's JSON as text and as the bytes to store.
_Bounded = tuple[Event, str | None, bytes | None]


@dataclass
class _Prepare:
    events: list[Event] = field(default_factory=list)
    encoded: Encoded = field(default_factory=dict)
    refused: Refusals = field(default_factory=list)

    def refuse(self, event: Event, exc: Exception) -> None:
        self.refused.append((event, RecordRefused(f"{type(exc).__name__}: {exc}")))


@dataclass(frozen=True)
class Prepared:
    """A batch ready to write: how many events it was given, those to write (each once,
    prepared), their payloads' JSON as stored where preparing wrote it, and those refused
    before the database saw them (outside the time window, or not preparable)."""

    given: int
    events: list[Event]
    encoded: Encoded
    refused: Refusals
    # of all of ``events``, what they change if all are new (None: made while inserting,
    # where a record it fails on is isolated)
    projection: Projection | None
    first: dict[str, datetime]  # each trace's earliest time here (agentdocket.store.months)


def _batches(events: Iterable[Event], size: int) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _projection(events: list[Event]) -> Projection | None:
    try:
        return project(events)
    except Exception:  # a record our projection fails on: the insert isolates it
        return None


def _raise_first(refusals: Refusals) -> None:
    if refusals:
        event, exc = refusals[0]
        raise exc.about(str(event.event_id))


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
        log: EventLog,
        months: Months,
        projector: Projector,
        datasets: Datasets,
        dead_letters: DeadLetters,
        redactor: Redactor,
        limits: Limits = STORE,
    ) -> None:
        self.db = db
        self.log = log
        self.months = months
        self.projector = projector
        self.datasets = datasets
        self.dead_letters = dead_letters
        self.redactor = redactor
        self.limits = limits

    def append(
        self, events: Iterable[Event], batch_size: int = BATCH, *, source: str = "append"
    ) -> AppendResult:
        """See :meth:`agentdocket.store.Store.append`. Each batch is prepared (limits,
        escaping, redaction: Python's work) on a second thread while the one before it is
        written (the database's work), so that neither waits for the other."""
        inserted = duplicates = refused = 0
        for batch in self._prepared_ahead(_batches(events, batch_size)):
            n, r = self._write([batch], source)
            inserted, duplicates, refused = (
                inserted + n,
                duplicates + batch.given - n - r,
                refused + r,
            )
        return AppendResult(inserted, duplicates, refused)

    def append_prepared(
        self, batches: Sequence[Prepared], *, source: str = "append"
    ) -> AppendResult:
        """Write batches :meth:`prepare` made, in one transaction, as :meth:`append` writes
        one: for a caller that prepares its events while another transaction is written (the
        receiver's requests, each prepared on its own thread before its group is committed)."""
        if not batches:
            return AppendResult(0, 0)
        inserted, refused = self._write(batches, source)
        return AppendResult(inserted, sum(b.given for b in batches) - inserted - refused, refused)

    def _prepared_ahead(self, batches: Iterator[list[Event]]) -> Iterator[Prepared]:
        """The batches prepared, each while the caller writes the one before. The batches are
        taken from ``batches`` on the caller's thread (an iterator may belong to it); a single
        batch is prepared there too, with no second thread."""
        first = next(batches, None)
        if first is None:
            return
        second = next(batches, None)
        if second is None:
            yield self.prepare(first)
            return
        with ThreadPoolExecutor(1, thread_name_prefix="agentdocket-prepare") as pool:
            ahead = pool.submit(self.prepare, first, together=False)
            for batch in itertools.chain([second], batches):
                ready = ahead.result()
                ahead = pool.submit(self.prepare, batch, together=False)
                yield ready
            yield ahead.result()

    def prepare(
        self, events: Sequence[Event], *, in_time: bool = True, together: bool = True
    ) -> Prepared:
        """``events`` made ready to write, before any database work: each once, inside the
        limits' time window (``in_time``), escaped and redacted. ``together``: redaction
        probes the payloads in one call (see :meth:`_redaction_flags`)."""
        unique = list({e.event_id: e for e in events}.values())
        timely, late = self._in_time(unique) if in_time else (unique, [])
        ready, encoded, refused = self._prepare(timely, together)
        return Prepared(
            len(events),
            ready,
            encoded,
            late + refused,
            _projection(ready),
            run_months.earliest(ready),
        )

    def _write(self, batches: Sequence[Prepared], source: str) -> tuple[int, int]:
        """Write ``batches`` in one transaction: how many events were new, how many refused.
        A conflict with a concurrent writer of the same traces (a deadlock) is retried: the
        batches are idempotent, and the failed transaction left nothing behind. So is a COPY
        the backend tried first and could not recover from in the transaction (CopyFailed),
        at once and without it."""
        redo = True  # a backend may COPY first, and be asked again without (CopyFailed)
        conflicts = 0
        while True:
            try:
                return self._write_once(batches, source, redo)
            except CopyFailed:
                if not redo:
                    raise
                redo = False  # at once, every batch through the staging table
            except WriteConflict:
                conflicts += 1
                if conflicts == CONFLICT_RETRIES:
                    raise
                time.sleep(0.05 * conflicts)

    def _write_once(
        self, batches: Sequence[Prepared], source: str, redo: bool = False
    ) -> tuple[int, int]:
        with self._write_for(batches) as conn:
            inserted = 0
            refusals: Refusals = []
            for batch in batches:
                n, refused = self._insert(conn, batch, redo)
                inserted += n
                refusals += batch.refused + refused
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
        batch = self.prepare(events)
        _raise_first(batch.refused)
        with self._write_for([batch]) as conn:
            inserted, refusals = self._insert(conn, batch)
            _raise_first(refusals)
            return inserted

    def import_all(
        self, datasets: Sequence[Dataset], events: Sequence[Event], batch_size: int = BATCH
    ) -> AppendResult:
        """See :meth:`agentdocket.store.Store.import_all`."""
        batches = [self.prepare(chunk) for chunk in _batches(iter(events), batch_size)]
        for batch in batches:
            _raise_first(batch.refused)
        inserted = 0
        with self._write_for(batches) as conn:
            for dataset in datasets:
                self.datasets.register_on(conn, dataset)
            for batch in batches:
                n, refusals = self._insert(conn, batch)
                _raise_first(refusals)
                inserted += n
        return AppendResult(inserted, len(events) - inserted)

    @contextmanager
    def _write_for(self, batches: Sequence[Prepared]) -> Iterator[Any]:
        """A write transaction for prepared ``batches``, their months' partitions made first
        (DDL never runs inside a batch's transaction; the refused events' months never get
        theirs)."""
        self.months.ensure_partitions(set().union(*(run_months.needed(b.events) for b in batches)))
        with self.db.write() as conn:
            yield conn

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
        """Insert and project ``events`` on ``conn`` (no time window): how many were new, and
        the events refused (everything else is written)."""
        batch = self.prepare(events, in_time=False)
        inserted, refused = self._insert(conn, batch)
        return inserted, batch.refused + refused

    def _insert(self, conn: Any, batch: Prepared, redo: bool = False) -> tuple[int, Refusals]:
        """Insert and project a prepared batch on ``conn``: how many events were new, and
        those the database refused. ``redo``: the caller runs the transaction again on
        :class:`CopyFailed` (:meth:`EventLog.insert_events`)."""
        if not batch.events:
            return 0, []
        months, new = run_months.place(self.log, conn, batch.events, batch.first)
        return self._insert_isolating(
            conn, batch.events, months, batch.encoded, batch.projection, new, redo
        )

    def _prepare(
        self, events: list[Event], together: bool = True
    ) -> tuple[list[Event], Encoded, Refusals]:
        """Events as they are written: within the limits (:mod:`agentdocket.store.limits`),
        escaped (:mod:`agentdocket.store.escaping`), then redacted; with the JSON of each
        payload as stored where preparing it wrote that already. An event that cannot be
        prepared (an error of its data's making, never the database's) is refused.
        ``together``: redaction probes the payloads in one call (:meth:`_probe_together`),
        else each as it is prepared."""
        out = _Prepare()
        together = together and self.redactor.active
        bounded: list[_Bounded] = []
        for event in events:
            try:
                item = self._bounded(event)
            except DATA_ERRORS as exc:
                out.refuse(event, exc)
                continue
            if together:
                bounded.append(item)
            else:  # probed now, payload by payload (see _probe_together)
                text = item[1]
                flagged = self.redactor.active and (text is None or self.redactor.needs(text))
                self._finish(out, item, flagged)
        for item, flagged in zip(bounded, self._probe_together(bounded), strict=True):
            self._finish(out, item, flagged)
        return out.events, out.encoded, out.refused

    def _finish(self, out: _Prepare, item: _Bounded, flagged: bool) -> None:
        """Redact a bound and escaped event where a rule may apply (``flagged``), and add it
        to ``out``."""
        event, text, raw = item
        if flagged:
            try:
                redacted = self.redactor.event(event, text, probed=text is not None)
            except DATA_ERRORS as exc:
                out.refuse(event, exc)
                return
            if redacted is not event:
                event, raw = redacted, None
        out.events.append(event)
        if raw is not None:
            out.encoded[event.event_id] = raw

    def _bounded(self, event: Event) -> _Bounded:
        """``event`` within the limits and escaped, with its payload's JSON (text, and the
        bytes to store) where that was written on the way: one serialisation serves the
        limits', escaping's and redaction's probes and the database."""
        payload, raw = bound_json(event.payload, self.limits)
        payload, text = escape_json(payload, raw)
        if text is None:
            raw = None
        elif raw is None:  # bound to the limits: escaping's probe wrote the new JSON
            raw = text.encode()
        if payload is not event.payload:
            event = replace(event, payload=payload)
        return event, text, raw

    def _probe_together(self, bounded: list[_Bounded]) -> list[bool]:
        """Which payloads redaction's rules may change, probed in one call of the automaton
        (one without its JSON, an escaped one, is walked whatever it holds). The automaton
        lets go of the interpreter lock on each call: a thread waiting for it (a receiver's,
        decoding) takes it once a batch, not once a payload (12.7k to 13.5k spans/s). Ahead
        of a writing thread, the other way is faster: a call a payload lets that thread, back
        from the database, take the lock at once (55k to 72k events/s, bench/ingest.py)."""
        texts = [t for _, t, _ in bounded if t is not None]
        raws = [r for _, t, r in bounded if t is not None and r is not None]
        flags = iter(self.redactor.flagged(raws, texts))
        return [True if t is None else next(flags) for _, t, _ in bounded]

    def _insert_isolating(
        self,
        conn: Any,
        events: list[Event],
        months: dict[str, date],
        encoded: Encoded,
        projected: Projection | None = None,
        new: frozenset[str] = frozenset(),
        redo: bool = False,
    ) -> tuple[int, Refusals]:
        """Insert and project ``events`` in a savepoint. If the database refuses the batch, or
        our own code fails on some record of it (projecting it, say), halve it until the
        refused events stand alone (about three times the work of one insert for one bad event
        in a batch), so that all the others are written. This is the one place a record is
        isolated: every writer (the receiver's sink, imports, retries) comes through it.
        ``new``: the traces new in the whole batch (:func:`agentdocket.store.months.place`);
        a half knows none (the other half may have written them)."""
        if not events:
            return 0, []
        try:
            with self.db.savepoint(conn):
                payloads = [encoded.get(e.event_id) for e in events]
                inserted, projection = self.log.insert_events(
                    conn, events, months, payloads, projected, redo
                )
                self.projector.apply(conn, projection, months, new)
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
        first, refused_first = self._insert_isolating(
            conn, events[:middle], months, encoded, redo=redo
        )
        second, refused_second = self._insert_isolating(
            conn, events[middle:], months, encoded, redo=redo
        )
        return first + second, refused_first + refused_second
