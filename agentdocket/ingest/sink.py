"""Durable delivery of events: the sink the tracer's exporter, the OTLP receiver and the
LangChain handler all hand their events to.

:meth:`Sink.deliver` appends events to the store. When the database is unreachable, or the
store cannot work (a schema to migrate), the batch goes to the spool
(:mod:`agentdocket.ingest.spool`) and the database is retried with exponential back-off; what
is spooled is replayed in order, in the background, before new batches. Every event is first
bound to the limits (:mod:`agentdocket.store.limits`: nesting depth, string length, items),
before it is spooled or stored. A record the database refuses, or one that cannot be prepared
for it, is not an outage: the store keeps it as a dead letter and stores the rest of its batch,
so one bad record never holds up the others. Deliveries that arrive together are committed
together (:mod:`agentdocket.ingest.group_commit`), on one or more connections. Only the store's
own errors
(:mod:`agentdocket.store.errors`) mean the database is away. Nothing is raised into the
caller: errors are logged (rate-limited) and counted in :attr:`Sink.stats`, and events that
could be kept nowhere are counted as dropped and reported as a ``telemetry.dropped`` event
once the database is back. The sink's own database work runs with OpenTelemetry
instrumentation suppressed, so it is never traced.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value

from agentdocket.events import Event
from agentdocket.ingest.delivery import DeliveryStats
from agentdocket.ingest.drops import Drops
from agentdocket.ingest.group_commit import Delivered, Lane, Request, split, worst
from agentdocket.ingest.replayer import Replayer
from agentdocket.ingest.spool import DEFAULT_MAX_BYTES, Spool
from agentdocket.store import (
    AppendResult,
    Opener,
    Store,
    StoreError,
    database_url,
    display_url,
)
from agentdocket.store.appending import Prepared
from agentdocket.store.backends import backend_of
from agentdocket.store.config import parse_url
from agentdocket.store.limits import LIVE, Limits, bound_json
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.ingest")

SPOOL_ENV = "AGENTDOCKET_SPOOL_DIR"
CONNECT_TIMEOUT_S = 5
__all__ = ["Delivered", "DeliveryStats", "Sink", "default_spool_dir"]


def default_spool_dir(url: str) -> Path:
    """``$AGENTDOCKET_SPOOL_DIR`` or the user cache, one subdirectory per database."""
    base = os.environ.get(SPOOL_ENV)
    if base:
        root = Path(base)
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(cache) / "agentdocket" / "spool"
    key = hashlib.sha256(display_url(url).encode()).hexdigest()[:16]
    return root / key


def with_connect_timeout(url: str) -> str:
    """``url`` with the query parameters its backend's live writers add (a bounded connect)."""
    parsed = parse_url(url)
    wanted = {k: v for k, v in backend_of(parsed).live_query.items() if k not in parsed.query}
    if not wanted:
        return url
    return parsed.update_query_dict(wanted).render_as_string(hide_password=False)


class Sink:
    """Events into agentdocket's store, durably, never raising into the caller.

    ``url`` (the database URL) defaults to ``AGENTDOCKET_DATABASE_URL`` (else ./agentdocket.db).
    ``spool_dir`` / ``spool_max_bytes`` place and bound the spool; past the maximum, new events
    are dropped and counted. ``source`` is named in the dead letters of what this sink delivers
    (``tracer``, ``receiver``, ``langchain``). ``limits`` (default: live ingestion's, with its
    time window) and then ``redactor`` (default: ``AGENTDOCKET_REDACT``'s rules) are applied
    before anything is stored or spooled. ``connections``: how many database connections
    write at once, each taking the traces whose id hashes to it
    (:mod:`agentdocket.ingest.group_commit`).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        spool_dir: str | Path | None = None,
        spool_max_bytes: int = DEFAULT_MAX_BYTES,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        replay_on_start: bool = True,
        replay_every_s: float = 2.0,
        store_factory: Callable[[], Store] | None = None,
        redactor: Redactor | None = None,
        source: str = "tracer",
        limits: Limits = LIVE,
        connections: int = 1,
    ) -> None:
        if connections < 1:
            raise ValueError(f"connections: {connections}, at least 1")
        self.url = with_connect_timeout(database_url(url))
        directory = Path(spool_dir) if spool_dir else default_spool_dir(self.url)
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.spool = Spool(directory, spool_max_bytes, self.redactor)
        self.source = source
        self.limits = limits
        self.stats = DeliveryStats()
        # where its stores come from (its readers may share it: the receiver's lookups)
        self.open = store_factory or Opener(self.url, redactor=self.redactor, limits=limits)
        if not backend_of(parse_url(self.url)).concurrent_writers:
            connections = 1  # one write lock: a second connection would only wait for it
        self._lanes = [Lane(i) for i in range(connections)]
        # the sink's shared state (back-off, counts, drops), changed by every lane
        self._state = threading.RLock()
        self._retry_initial = retry_initial_s
        self._retry_max = retry_max_s
        self._backoff = retry_initial_s
        self._retry_at = 0.0
        self._last_warning = 0.0
        self._drops = Drops()
        self._replayer = Replayer(self._replay_once, replay_every_s)
        if replay_on_start and self.spool.pending():
            self._replayer.ensure()

    def close(self) -> None:
        """Stop replaying, report what was dropped (a last chance), close the store and the
        spool (an empty spool file is removed)."""
        self._replayer.close()
        with self._working(), self._lanes[0].lock:
            if self._drops:
                self._deliver(self._lanes[0], {})
        for lane in self._lanes:
            with lane.lock:
                self._close_store(lane)
        self.spool.close()

    # --- delivery -------------------------------------------------------------------------------

    def flush_spool(self) -> bool:
        """Try now to deliver what is spooled (ignoring the back-off); True when nothing waits."""
        with self._working(), self._lanes[0].lock:
            self._retry_at = 0.0
            return self._deliver(self._lanes[0], {})[0] == "stored"

    def _replay_once(self) -> bool:
        """Deliver what is spooled (respecting the back-off): True once nothing waits."""
        with self._working(), self._lanes[0].lock:
            if self._replayer.closed or not self.spool.pending():
                return True
            self._deliver(self._lanes[0], {})
            return False

    def deliver(
        self, events: list[Event], n_spans: int = 0, source: str | None = None
    ) -> Delivered:
        """Store ``events`` now, else spool them: what became of them. For callers that hold
        their events until told they are safe (the OTLP receiver answers 200 only for "stored"
        or "spooled"). With ``n_spans`` 0, events that could not be kept are not counted as
        dropped: the caller still has them. ``source`` (default: the sink's) is named in
        the dead letters of refused events. Never raises."""
        try:
            with self._working():
                with self._state:
                    self.stats.spans += n_spans
                    self.stats.events += len(events)
                parts = split(self._bound(events), len(self._lanes))
                requests = [
                    (self._lanes[lane], Request(part, source or self.source))
                    for lane, part in sorted(parts.items())
                ]
                if not requests:
                    return "stored"
                requests[0][1].n_spans = n_spans  # counted once, if lost
                for lane, request in requests:
                    request.prepared = self._prepared(lane, request.events)
                    lane.submit(request)
                return worst([lane.settle(request, self._commit) for lane, request in requests])
        except Exception:
            with self._state:
                self.stats.failures += 1
            log.exception("agentdocket: delivering %d events failed", len(events))
            return "dropped"

    def health(self) -> dict[str, Any]:
        """Whether the database answers now, whether anything waits in the spool, and the
        dead letters kept (None while the database is away). Never raises."""
        reachable, letters = False, None
        try:
            lane = self._lanes[0]
            with self._working(), lane.lock:
                if time.monotonic() >= self._retry_at:
                    try:
                        store = self._connect(lane)
                        store.ping()
                        letters = store.dead_letters.counts()
                        reachable = True
                    except Exception as exc:
                        self._failed(lane, exc)
        except Exception:
            log.exception("agentdocket: the health check failed")
        return {"database": reachable, "spooled": self.spool.pending(), "dead_letters": letters}

    @contextmanager
    def _working(self) -> Iterator[None]:
        """The sink's own work: with OpenTelemetry instrumentation suppressed, so that its
        database calls are never traced."""
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            yield
        finally:
            detach(token)

    def _bound(self, events: list[Event]) -> list[Event]:
        """``events`` within the limits (the same list when all were)."""
        out = events
        for i, event in enumerate(events):
            payload, _ = bound_json(event.payload, self.limits)  # a walk only past a limit
            if payload is not event.payload:
                if out is events:
                    out = list(events)
                out[i] = replace(event, payload=payload)
        return out

    def _prepared(self, lane: Lane, events: list[Event]) -> Prepared | None:
        """``events`` made ready to write by the lane's store, on the caller's thread, before
        they are queued: so that a request is prepared while the group before it is written,
        not after (the lane's lock is held for the database's work alone). None where the lane
        has no store open (the database away: the events may go to the spool) or preparing
        failed (the append prepares them again, and isolates what it cannot)."""
        store = lane.store
        if store is None:
            return None
        try:
            return store.prepare(events)
        except Exception:
            log.exception("agentdocket: preparing %d events failed", len(events))
            return None

    def _commit(self, lane: Lane, group: list[Request]) -> Delivered:
        """Deliver a lane's group of requests at once (one append per source); the spans of
        what is lost are counted. Never raises."""
        batches: dict[str, list[Request]] = {}
        for request in group:
            batches.setdefault(request.source, []).append(request)
        try:
            outcome, lost = self._deliver(lane, batches)
        except Exception:
            with self._state:
                self.stats.failures += 1
            log.exception("agentdocket: delivering %d requests failed", len(group))
            outcome, lost = "dropped", "error"
        if lost is not None:
            for request in group:
                self.dropped(lost, request.n_spans)
        return outcome

    def _deliver(
        self, lane: Lane, batches: dict[str, list[Request]]
    ) -> tuple[Delivered, str | None]:
        """Store ``batches`` (requests by source) on ``lane``, after the spool, or spool them:
        what became of them, and why they were lost if they were. Under ``lane.lock``."""
        if time.monotonic() >= self._retry_at:
            try:
                store = self._connect(lane)
            except Exception as exc:  # whatever the driver raised: the database is away
                self._failed(lane, exc)
            else:
                try:
                    self._store_all(store, batches)
                    with self._state:
                        self._backoff = self._retry_initial
                    return "stored", None
                except StoreError as exc:  # the database is away, or the store cannot work
                    self._failed(lane, exc)
                except Exception:  # not the database's doing: no outage, no back-off
                    with self._state:
                        self.stats.failures += 1
                    log.exception("agentdocket: storing events failed")
        events = [e for batch in batches.values() for r in batch for e in r.events]
        if not events:
            return "unavailable", None
        lost = self._spool(events)
        return ("spooled", None) if lost is None else ("dropped", lost)

    def _store_all(self, store: Store, batches: dict[str, list[Request]]) -> None:
        """What waits in the spool, then ``batches``, then the report of what was dropped."""
        if self.spool.pending():
            replayed = self.spool.replay(
                lambda batch, origin: self._append(store, batch, origin),
                store.dead_letters.keep,
            )
            with self._state:
                self.stats.replayed += replayed
        for source, requests in batches.items():
            prepared = [r.prepared for r in requests if r.prepared is not None]
            if len(prepared) == len(requests):
                self._count(store.append_prepared(prepared, source=source))
            else:
                self._append(store, [e for r in requests for e in r.events], source)
            with self._state:
                self.stats.delivered += sum(len(r.events) for r in requests)
        self._drops.report(store)

    def _append(self, store: Store, events: list[Event], source: str) -> AppendResult:
        """``store.append``: a record refused, or one our own code fails on, is isolated there
        and kept as a dead letter; a :class:`StoreError` (the database away) reaches the
        caller, which spools and retries."""
        return self._count(store.append(events, source=source))

    def _count(self, result: AppendResult) -> AppendResult:
        with self._state:
            self.stats.refused += result.refused
        return result

    def _spool(self, events: list[Event]) -> str | None:
        """Spool ``events``: None once they are, else why they are lost."""
        try:
            if self.spool.append(events):
                with self._state:
                    self.stats.spooled += len(events)
                self._replayer.ensure()
                return None
            return "spool_full"
        except OSError:
            log.exception("agentdocket: could not write the spool %s", self.spool.path)
            return "spool_error"

    def _connect(self, lane: Lane) -> Store:
        if lane.store is None:
            lane.store = self.open()
        return lane.store

    def _failed(self, lane: Lane, exc: Exception) -> None:
        self._close_store(lane)
        with self._state:
            self.stats.failures += 1
            self._retry_at = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, self._retry_max)
            now = time.monotonic()
            warn = now - self._last_warning > 60
            if warn:
                self._last_warning = now
        if warn:
            log.warning(
                "agentdocket: the store at %s is unavailable (%s: %s); spooling to %s and retrying",
                display_url(self.url),
                type(exc).__name__,
                str(exc).strip().splitlines()[0] if str(exc).strip() else "",
                self.spool.directory,
            )

    def _close_store(self, lane: Lane) -> None:
        store, lane.store = lane.store, None
        if store is not None:
            try:
                store.close()
            except Exception:
                log.debug("agentdocket: closing the store failed", exc_info=True)

    # --- dropped spans ----------------------------------------------------------------------------

    def dropped(self, reason: str, n: int) -> None:
        """Count ``n`` spans lost for ``reason``; reported once the database is back."""
        if n <= 0:
            return
        with self._state:
            self.stats.dropped[reason] = self.stats.dropped.get(reason, 0) + n
        self._drops.count(reason, n)
