"""The tracer's OpenTelemetry spans out of the process it observes, as events.

:class:`EventExporter` is an OpenTelemetry ``SpanExporter`` and no more: it runs on the span
processor's worker thread (the stock ``BatchSpanProcessor``), never on the agent's, maps each
batch of spans to events (:mod:`agentdocket.ingest.mapping`) and hands them to a
:class:`~agentdocket.ingest.delivery.Delivery`. Nothing is raised into the host.
:class:`StoreSpanExporter` (:mod:`agentdocket.tracer.store_exporter`) is that exporter with
the durable sink behind it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from agentdocket.ingest.delivery import Delivery, DeliveryStats
from agentdocket.ingest.mapping import spans_to_events

log = logging.getLogger("agentdocket.tracer")


class EventExporter(SpanExporter):
    """An OpenTelemetry ``SpanExporter`` handing spans, mapped to events, to ``delivery``.
    ``keep_unrecognized`` keeps spans that are neither ours nor OpenInference nor GenAI as
    generic ``step`` events (off by default: a host's HTTP spans are not steps)."""

    def __init__(self, delivery: Delivery, *, keep_unrecognized: bool = False) -> None:
        self.delivery = delivery
        self.keep_unrecognized = keep_unrecognized
        self._processor: CountingBatchSpanProcessor | None = None
        self._queue_drops_seen = 0

    @property
    def stats(self) -> DeliveryStats:
        return self.delivery.stats

    # --- the SpanExporter interface -------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            events = spans_to_events(spans, keep_unrecognized=self.keep_unrecognized)
            outcome = self.delivery.deliver(events, len(spans))
            self._collect_queue_drops()  # after these spans are counted as exported
        except Exception:  # never into the host
            self.delivery.stats.failures += 1
            log.exception("agentdocket: exporting %d spans failed", len(spans))
            return SpanExportResult.FAILURE
        return SpanExportResult.FAILURE if outcome == "dropped" else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._collect_queue_drops()
        self.delivery.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    # --- spans the processor's full queue dropped ---------------------------------------------

    def watch_queue(self, processor: CountingBatchSpanProcessor) -> None:
        """Report the spans ``processor`` (the one feeding this exporter) drops."""
        self._processor = processor

    def _collect_queue_drops(self) -> None:
        processor = self._processor
        if processor is None:
            return
        lost = processor.ended - self.delivery.stats.spans - processor.queued()
        if lost > self._queue_drops_seen:
            self.delivery.dropped("queue_full", lost - self._queue_drops_seen)
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
        if isinstance(exporter, EventExporter):
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
