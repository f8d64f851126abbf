"""``StoreSpanExporter``: the tracer's OpenTelemetry spans into the event log.

An OpenTelemetry ``SpanExporter``: it runs on the span processor's worker thread (the stock
``BatchSpanProcessor``), never on the agent's. Each batch of spans is mapped to events
(:mod:`agentdocket.ingest.mapping`) and handed to a :class:`~agentdocket.ingest.sink.Sink`,
which stores them or spools them while the database is away. Nothing is raised into the host.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.sink import DeliveryStats, Sink
from agentdocket.ingest.spool import DEFAULT_MAX_BYTES, Spool
from agentdocket.store import Store
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.tracer")


class StoreSpanExporter(SpanExporter):
    """An OpenTelemetry ``SpanExporter`` writing spans as events into agentdocket's store.

    ``url`` (the database URL) defaults to ``AGENTDOCKET_DATABASE_URL`` (else ./agentdocket.db).
    ``spool_dir`` / ``spool_max_bytes`` place and bound the spool; past the maximum, new spans
    are dropped and counted, and the count is stored as a ``telemetry.dropped`` event once the
    database is back. ``keep_unrecognized`` keeps spans that are neither ours nor OpenInference
    nor GenAI as generic ``step`` events (off by default: a host's HTTP spans are not steps).
    ``redactor`` (default: ``AGENTDOCKET_REDACT``'s rules) is applied before anything is stored
    or spooled. The other options are the :class:`~agentdocket.ingest.sink.Sink`'s.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        spool_dir: str | Path | None = None,
        spool_max_bytes: int = DEFAULT_MAX_BYTES,
        keep_unrecognized: bool = False,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 30.0,
        replay_on_start: bool = True,
        replay_every_s: float = 2.0,
        store_factory: Callable[[str], Store] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.sink = Sink(
            url,
            spool_dir=spool_dir,
            spool_max_bytes=spool_max_bytes,
            retry_initial_s=retry_initial_s,
            retry_max_s=retry_max_s,
            replay_on_start=replay_on_start,
            replay_every_s=replay_every_s,
            store_factory=store_factory,
            redactor=redactor,
            source="tracer",
        )
        self.keep_unrecognized = keep_unrecognized
        self._processor: CountingBatchSpanProcessor | None = None
        self._queue_drops_seen = 0

    @property
    def url(self) -> str:
        return self.sink.url

    @property
    def spool(self) -> Spool:
        return self.sink.spool

    @property
    def stats(self) -> DeliveryStats:
        return self.sink.stats

    # --- the SpanExporter interface -------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            events = spans_to_events(spans, keep_unrecognized=self.keep_unrecognized)
            outcome = self.sink.deliver(events, len(spans))
            self._collect_queue_drops()  # after these spans are counted as exported
        except Exception:  # never into the host
            self.sink.stats.failures += 1
            log.exception("agentdocket: exporting %d spans failed", len(spans))
            return SpanExportResult.FAILURE
        return SpanExportResult.FAILURE if outcome == "dropped" else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._collect_queue_drops()
        self.sink.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def flush_spool(self) -> bool:
        """Try now to deliver what is spooled (ignoring the back-off); True when nothing waits."""
        return self.sink.flush_spool()

    # --- spans the processor's full queue dropped ---------------------------------------------

    def watch_queue(self, processor: CountingBatchSpanProcessor) -> None:
        """Report the spans ``processor`` (the one feeding this exporter) drops."""
        self._processor = processor

    def _collect_queue_drops(self) -> None:
        processor = self._processor
        if processor is None:
            return
        lost = processor.ended - self.sink.stats.spans - processor.queued()
        if lost > self._queue_drops_seen:
            self.sink.dropped("queue_full", lost - self._queue_drops_seen)
            self._queue_drops_seen = lost

    @property
    def queue_dropped(self) -> int:
        """Spans the watched processor's full queue dropped, as far as counted yet."""
        self._collect_queue_drops()
        return self._queue_drops_seen


class CountingBatchSpanProcessor(BatchSpanProcessor):
    """The stock ``BatchSpanProcessor``, keeping the counts from which the exporter tells how
    many spans its full queue dropped (the SDK only logs them): spans handed to the queue, and
    the queue's length. Spans ended minus spans exported minus spans queued is exact once the
    queue is idle, and never more than the truth in between."""

    def __init__(self, exporter: SpanExporter, **kwargs: Any) -> None:
        super().__init__(exporter, **kwargs)
        self.ended = 0
        self._lock = threading.Lock()
        if isinstance(exporter, StoreSpanExporter):
            exporter.watch_queue(self)

    def on_end(self, span: ReadableSpan) -> None:
        super().on_end(span)
        if span.context is not None and span.context.trace_flags.sampled:
            with self._lock:
                self.ended += 1

    def queued(self) -> int:
        # No public way: the SDK exposes neither its queue's length nor a count of what its
        # full queue discards. Read the length where it is; elsewhere 0, which undercounts
        # drops until the queue is idle and never overcounts.
        queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)
        return len(queue) if queue is not None else 0
