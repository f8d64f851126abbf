"""A langchain-core callback handler recording LangChain runs as agentdocket events.

:class:`AgentdocketHandler` is a ``BaseTracer``: langchain-core assembles the run tree, and when
the root run ends its persist step hands the tree to
:func:`~agentdocket.ingest.langchain_runs.run_to_events` (a pure function; the mapping is
described there) and queues the events for a background thread, which stores them, or spools
them while the database is away (the shared :class:`~agentdocket.ingest.sink.Sink`, with its
back-off). The agent's thread only maps and queues; nothing is ever raised into it, and a full
queue drops runs and counts them. A root run that starts while a run of our tracer is the
current span joins that run.
"""

from __future__ import annotations

import logging
import queue
import threading
import uuid

from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run
from opentelemetry import trace as otel_trace

from agentdocket.events import Event
from agentdocket.ingest import attributes as A
from agentdocket.ingest.langchain_runs import RUN_SETTINGS, chat_message, run_to_events
from agentdocket.ingest.sink import Sink
from agentdocket.store.redaction import Redactor

log = logging.getLogger("agentdocket.langchain")


class AgentdocketHandler(BaseTracer):
    """Record LangChain runs into agentdocket's store: ``config={"callbacks": [handler]}``.

    ``url`` defaults to ``AGENTDOCKET_DATABASE_URL`` (else ./agentdocket.db); ``sink`` shares an
    existing :class:`~agentdocket.ingest.sink.Sink` instead. ``dataset``,
    ``dataset_version``, ``case_id``, ``agent`` and ``strategy`` tag every run (the run's
    metadata can tag it too). Call :meth:`flush` to wait for queued runs, :meth:`close` at exit.
    """

    name: str = "agentdocket"

    def __init__(
        self,
        url: str | None = None,
        *,
        sink: Sink | None = None,
        spool_dir: str | None = None,
        redactor: Redactor | None = None,
        max_queue: int = 1000,
        **settings: str | None,
    ) -> None:
        super().__init__(_schema_format="original+chat")
        unknown = set(settings) - set(RUN_SETTINGS)
        if unknown:
            raise TypeError(f"unknown settings {sorted(unknown)}; known: {RUN_SETTINGS}")
        self.settings = settings
        self.sink = sink or Sink(url, spool_dir=spool_dir, redactor=redactor, source="langchain")
        self._within: dict[uuid.UUID, tuple[str, str]] = {}
        self.dropped = 0  # runs lost to a full queue or a mapping failure
        self.failures = 0
        self._queue: queue.Queue[list[Event] | None] = queue.Queue(max_queue)
        self._worker = threading.Thread(
            target=self._drain, name="agentdocket-langchain", daemon=True
        )
        self._worker.start()

    def _on_run_create(self, run: Run) -> None:
        """A root run started inside a run our tracer records joins it (see
        :func:`run_to_events`)."""
        if run.parent_run_id is not None:
            return
        span = otel_trace.get_current_span()
        context = span.get_span_context()
        attributes = getattr(span, "attributes", None) or {}
        if context.is_valid and attributes.get(A.KIND) == "run":
            self._within[run.id] = (
                format(context.trace_id, "032x"),
                format(context.span_id, "016x"),
            )

    def _persist_run(self, run: Run) -> None:
        within = self._within.pop(run.id, None)
        try:
            events = run_to_events(run, within=within, **self.settings)
        except Exception:  # never into the agent
            self.dropped += 1
            log.exception("agentdocket: could not map LangChain run %s", run.id)
            return
        try:
            self._queue.put_nowait(events)
        except queue.Full:
            self.dropped += 1
            log.warning("agentdocket: queue full, dropped LangChain run %s", run.id)

    def _drain(self) -> None:
        while True:
            events = self._queue.get()
            try:
                if events is None:
                    return
                if self.sink.deliver(events, n_spans=1) == "dropped":
                    self.failures += 1
            except Exception:
                self.failures += 1
                log.exception("agentdocket: storing a LangChain run failed")
            finally:
                self._queue.task_done()

    def flush(self) -> None:
        """Wait until every queued run is stored or spooled."""
        self._queue.join()

    def close(self) -> None:
        self.flush()
        self._queue.put(None)
        self._worker.join()
        self.sink.close()


__all__ = ["AgentdocketHandler", "chat_message", "run_to_events"]
