"""``StoreSpanExporter``: the tracer's exporter with the durable sink behind it, the spans'
events stored in agentdocket's database, or spooled while it is away
(:class:`~agentdocket.ingest.sink.Sink`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agentdocket.ingest.sink import Sink
from agentdocket.ingest.spool import DEFAULT_MAX_BYTES, Spool
from agentdocket.store import Store
from agentdocket.store.redaction import Redactor
from agentdocket.tracer.exporter import EventExporter


class StoreSpanExporter(EventExporter):
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
        store_factory: Callable[[], Store] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.sink = sink = Sink(
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
        super().__init__(sink, keep_unrecognized=keep_unrecognized)

    @property
    def url(self) -> str:
        return self.sink.url

    @property
    def spool(self) -> Spool:
        return self.sink.spool

    def flush_spool(self) -> bool:
        """Try now to deliver what is spooled (ignoring the back-off); True when nothing waits."""
        return self.sink.flush_spool()
