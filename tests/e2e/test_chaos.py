"""Chaos: the database stopped and started under OTLP load. Every trace the stock exporter had
acknowledged is stored exactly once. On a PostgreSQL cluster of the test's own, so the rest of
the suite is undisturbed; bounded in traces and time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentdocket.store import open_store
from tests.helpers.otlp_server import Server
from tests.helpers.pg_cluster import Cluster

TRACES = 240  # each an agent span and two tool spans: 6 events
PER_BATCH = 4
EVENTS_PER_TRACE = 6


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    c.start()
    yield c
    c.remove()


def _traces() -> list[list[ReadableSpan]]:
    """Finished spans, a list per trace, made once by the SDK (sent later, in batches)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "chaos"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("chaos")
    for i in range(TRACES):
        with tracer.start_as_current_span(
            f"run {i}", attributes={"openinference.span.kind": "AGENT", "input.value": str(i)}
        ):
            for j in range(2):
                with tracer.start_as_current_span(
                    "lookup",
                    attributes={
                        "openinference.span.kind": "TOOL",
                        "tool.name": "lookup",
                        "output.value": f"{i}/{j}",
                    },
                ):
                    pass
    provider.shutdown()
    by_trace: dict[int, list[ReadableSpan]] = {}
    for span in memory.get_finished_spans():
        assert span.context is not None
        by_trace.setdefault(span.context.trace_id, []).append(span)
    return list(by_trace.values())


@pytest.mark.slow
def test_every_acknowledged_trace_is_stored_once_across_a_database_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = cluster.create_database("chaos")
    open_store(url).close()  # migrated
    server = Server(url, tmp_path / "spool").start()
    try:
        traces = _traces()
        exporter = OTLPSpanExporter(endpoint=server.endpoint, timeout=30)
        acknowledged: list[str] = []
        finished = threading.Event()

        def send() -> None:
            try:
                for start in range(0, len(traces), PER_BATCH):
                    batch = traces[start : start + PER_BATCH]
                    spans = [s for trace in batch for s in trace]
                    if exporter.export(spans) is SpanExportResult.SUCCESS:
                        acknowledged.extend(
                            f"{trace[0].context.trace_id:032x}"  # type: ignore[union-attr]
                            for trace in batch
                        )
                    time.sleep(0.02)
            finally:
                finished.set()

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(1.0)
        cluster.stop()  # under load: the receiver spools, and keeps answering 200
        time.sleep(3.0)
        cluster.start()
        sender.join(120)
        assert finished.is_set(), "the client did not finish"
        exporter.shutdown()

        def health() -> dict[str, object]:
            reply = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=10)
            result = reply.json()
            assert isinstance(result, dict)
            return result

        deadline = time.monotonic() + 60  # the spool is replayed in the background
        while health()["spooled"] or health()["database"] != "reachable":
            assert time.monotonic() < deadline, health()
            time.sleep(0.2)
        print(f"acknowledged {len(acknowledged)} of {TRACES} traces across the restart")
        assert len(acknowledged) >= TRACES * 0.9, "too few batches were acknowledged"
        log = server.log.read_text()
    finally:
        server.stop()
    with open_store(url) as store:
        counts = dict(
            store.recorder.read("SELECT trace_id, count(*) FROM events GROUP BY trace_id")  # type: ignore[arg-type]
        )
        stored = {r["trace_id"] for r in store.reader.list_runs(limit=None)}
        assert store.dead_letters.counts()["total"] == 0
    missing = [t for t in acknowledged if t not in stored]
    assert not missing, f"{len(missing)} acknowledged traces were lost\n{log}"
    assert {counts[t] for t in acknowledged} == {EVENTS_PER_TRACE}  # once each, and whole
    assert "spooling" in log  # the outage really happened under load
