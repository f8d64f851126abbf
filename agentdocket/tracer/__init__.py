"""Recording agents with OpenTelemetry: a few lines, conventional spans, durable delivery.

::

    from agentdocket import tracer

    tracer.configure()                      # AGENTDOCKET_DATABASE_URL, else ./agentdocket.db
    with tracer.run(agent="qa", question=q, strategy="sequential") as run:
        run.plan(["sql", "answer"])
        with run.tool_call("sql", {"query": q}) as call:
            call.result(rows)
        run.respond(answer)

Or add :class:`StoreSpanExporter` to a ``TracerProvider`` of your own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from typing_extensions import Unpack

from agentdocket.ingest.delivery import DeliveryStats
from agentdocket.ingest.spool import DEFAULT_MAX_BYTES
from agentdocket.store.redaction import Redactor
from agentdocket.tracer.api import Run, RunOptions, Tracer, current_run
from agentdocket.tracer.exporter import CountingBatchSpanProcessor, EventExporter
from agentdocket.tracer.labels import CaseSpanProcessor, for_case
from agentdocket.tracer.store_exporter import StoreSpanExporter

__all__ = [
    "CaseSpanProcessor",
    "Configured",
    "CountingBatchSpanProcessor",
    "DeliveryStats",
    "EventExporter",
    "Run",
    "RunOptions",
    "StoreSpanExporter",
    "Tracer",
    "configure",
    "current_run",
    "for_case",
    "get_tracer",
    "run",
    "shutdown",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])

# Sized for bursts: 100k steps in a tight loop queue ~100k spans before the worker catches up.
MAX_QUEUE_SIZE = 131_072
MAX_EXPORT_BATCH = 8_192
SCHEDULE_DELAY_MS = 500


@dataclass
class Configured:
    """What :func:`configure` set up."""

    provider: TracerProvider
    processor: CountingBatchSpanProcessor
    exporter: StoreSpanExporter
    tracer: Tracer

    @property
    def stats(self) -> DeliveryStats:
        return self.exporter.stats

    def flush(self, timeout_millis: int = 30_000) -> bool:
        """Export everything recorded so far (blocks the caller; for scripts, tests, exits)."""
        return bool(self.processor.force_flush(timeout_millis))

    def shutdown(self) -> None:
        """Flush, then stop the processor and close the store (spooled events stay spooled)."""
        self.processor.shutdown()  # type: ignore[no-untyped-call]


_default = Tracer()
_configured: Configured | None = None
_lock = threading.Lock()


def configure(
    database_url: str | None = None,
    *,
    spool_dir: str | Path | None = None,
    spool_max_bytes: int = DEFAULT_MAX_BYTES,
    max_queue_size: int = MAX_QUEUE_SIZE,
    max_export_batch_size: int = MAX_EXPORT_BATCH,
    schedule_delay_millis: float = SCHEDULE_DELAY_MS,
    keep_unrecognized: bool = False,
    service_name: str = "agentdocket-agent",
    provider: TracerProvider | None = None,
    set_global: bool = True,
    max_rows: int = 20,
    redactor: Redactor | None = None,
) -> Configured:
    """Record spans into agentdocket's store in one call.

    The exporter goes behind a ``BatchSpanProcessor`` (queue ``max_queue_size``; drops are
    counted) on ``provider``; else on the global provider when it is an SDK provider; else on a
    new provider, made global when ``set_global``. ``tracer.run(...)`` then records through it.
    ``redactor`` (default: the rules ``AGENTDOCKET_REDACT`` chooses) is applied to every event
    before it is stored or spooled.
    """
    global _default, _configured
    with _lock:
        if _configured is not None:
            raise RuntimeError(
                "agentdocket.tracer is already configured; call agentdocket.tracer.shutdown() "
                "before configuring it again"
            )
        exporter = StoreSpanExporter(
            database_url,
            spool_dir=spool_dir,
            spool_max_bytes=spool_max_bytes,
            redactor=redactor,
            keep_unrecognized=keep_unrecognized,
        )
        processor = CountingBatchSpanProcessor(
            exporter,
            max_queue_size=max_queue_size,
            max_export_batch_size=min(max_export_batch_size, max_queue_size),
            schedule_delay_millis=schedule_delay_millis,
        )
        if provider is None:
            current = trace.get_tracer_provider()
            if isinstance(current, TracerProvider):
                provider = current
            else:
                provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
                if set_global:
                    trace.set_tracer_provider(provider)
        provider.add_span_processor(processor)
        _default = Tracer(provider, max_rows=max_rows)
        _configured = Configured(provider, processor, exporter, _default)
        return _configured


def shutdown() -> None:
    """Flush and stop what :func:`configure` set up."""
    global _configured, _default
    with _lock:
        if _configured is not None:
            _configured.shutdown()
            _configured = None
            _default = Tracer()


def get_tracer() -> Tracer:
    """The tracer :func:`run` and :func:`tool` use."""
    return _default


def run(agent: str, **options: Unpack[RunOptions]) -> Run:
    """A run of ``agent`` (see :class:`RunOptions`), recorded through the configured tracer."""
    return _default.run(agent, **options)


def tool(fn: Any = None, /, *, name: str | None = None) -> Any:
    """Decorator: each call of the function is a tool call of the current run."""
    if fn is None:
        return _default.tool(name=name)
    return _default.tool(fn, name=name)
