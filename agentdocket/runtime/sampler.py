"""The receiver's upkeep of the database, on a thread of its own: its state now and then
(``pipeline_samples``), so that the pipeline dashboard shows the spool and the counts without
Prometheus, and the coming months' partitions, made ahead (hourly) so that the first events of
a month never wait for one. A sample that cannot be written (the database away) is skipped:
the spool's growth shows in the next one."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from agentdocket.runtime.metrics import Receiver
from agentdocket.store import Store
from agentdocket.store.months import months_ahead
from agentdocket.store.pipeline import PipelineSample

log = logging.getLogger("agentdocket.receiver")
EVERY_S = 15.0
PARTITIONS_EVERY_S = 3600.0


def sample(receiver: Receiver, process: str) -> PipelineSample:
    """The receiver's state now."""
    s = receiver.sink.stats
    spool = receiver.sink.spool
    return PipelineSample(
        at=datetime.now(UTC),
        process=process,
        spool_bytes=spool.size(),
        spool_files=len(spool.files()),
        spool_oldest_s=spool.oldest_age(),
        spans_received=receiver.stats.spans,
        events_stored=s.delivered + s.replayed,
        events_spooled=s.spooled,
        events_dead_lettered=s.refused,
        spans_dropped=sum(s.dropped.values()),
    )


class Sampler(threading.Thread):
    """Inserts a sample every ``every`` seconds until stopped, and one last on stopping."""

    def __init__(
        self, receiver: Receiver, open: Callable[[], Store], every: float = EVERY_S
    ) -> None:
        super().__init__(name="agentdocket-samples", daemon=True)
        self.receiver = receiver
        self.open = open
        self.every = every
        self.process = f"{socket.gethostname()}:{os.getpid()}"
        self.stopped = threading.Event()
        self._store: Store | None = None
        self.written = 0
        self._partitions_at = float("-inf")

    def _open(self) -> Store:
        if self._store is None:
            self._store = self.open()
        return self._store

    def _lost(self, what: str, exc: Exception) -> None:
        """Never into the receiver: say so, drop the connection, try again next time."""
        log.info("%s: %s", what, exc)
        if self._store is not None:
            try:
                self._store.close()
            finally:
                self._store = None

    def write(self) -> bool:
        try:
            self._open().pipeline.record(sample(self.receiver, self.process))
        except Exception as exc:  # the next sample will tell
            self._lost("pipeline sample not written", exc)
            return False
        self.written += 1
        if time.monotonic() - self._partitions_at >= PARTITIONS_EVERY_S:
            self.ensure_partitions()
        return True

    def ensure_partitions(self) -> None:
        """This month's partitions and the next three's, made if missing."""
        try:
            self._open().ensure_partitions(months_ahead())
            self._partitions_at = time.monotonic()
        except Exception as exc:  # tried again with the next sample
            self._lost("partitions ahead not checked", exc)

    def run(self) -> None:
        self.ensure_partitions()
        while not self.stopped.wait(self.every):
            self.write()

    def stop(self) -> None:
        self.stopped.set()
        self.join()
        self.write()
        if self._store is not None:
            self._store.close()
