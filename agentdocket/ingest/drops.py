"""Spans lost (spool full or unwritable, the exporter's queue full), counted by reason and
reported as ``telemetry.dropped`` events once the database takes them."""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agentdocket.events import Event, TelemetryDropped, format_ts

if TYPE_CHECKING:
    from agentdocket.store import Store

log = logging.getLogger("agentdocket.ingest")


@dataclass
class _Drops:
    count: int = 0
    first: datetime | None = None
    last: datetime | None = None


class Drops:
    """What was lost since the last report, by reason; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, _Drops] = {}
        self._trace = uuid.uuid4().hex  # this process's reports, one trace
        self._reports = 0

    def __bool__(self) -> bool:
        return bool(self._pending)

    def count(self, reason: str, n: int) -> None:
        with self._lock:
            drops = self._pending.setdefault(reason, _Drops())
            now = datetime.now(UTC)
            drops.count += n
            drops.first = drops.first or now
            drops.last = now
        log.warning("agentdocket: dropped %d spans (%s)", n, reason)

    def report(self, store: Store) -> None:
        """Append one ``telemetry.dropped`` event per reason, then forget them (kept if the
        append fails)."""
        with self._lock:
            if not self._pending:
                return
            events = []
            for reason, drops in sorted(self._pending.items()):
                self._reports += 1
                payload = TelemetryDropped(
                    count=drops.count,
                    reason=reason,  # type: ignore[arg-type]
                    first_dropped_at=format_ts(drops.first) if drops.first else None,
                    last_dropped_at=format_ts(drops.last) if drops.last else None,
                    process={"host": socket.gethostname(), "pid": os.getpid()},
                )
                events.append(
                    Event.create(
                        trace_id=self._trace,
                        span_id=uuid.uuid4().hex[:16],
                        seq=self._reports,
                        payload=payload,
                    )
                )
            store.append(events)
            self._pending.clear()
