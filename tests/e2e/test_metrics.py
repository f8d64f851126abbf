"""``GET /metrics``: Prometheus's own parser reads it, and its counters match the database
after a run of known size."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client.parser import text_string_to_metric_families

from agentdocket.store import open_store
from tests.helpers.otlp_server import Server

RUNS = 4


@pytest.fixture
def server(url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(url, tmp_path / "spool").start()
    yield s
    s.stop()


def _samples(endpoint: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = httpx.get(endpoint.replace("/v1/traces", "/metrics"), timeout=10)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
    }


def test_metrics_count_what_the_database_holds(server: Server, url: str) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
    tracer = provider.get_tracer("test")
    for i in range(RUNS):
        root = {"openinference.span.kind": "AGENT", "input.value": f"q{i}", "output.value": "a"}
        with tracer.start_as_current_span("agent", attributes=root):
            tool = {"openinference.span.kind": "TOOL", "tool.name": "t", "input.value": "{}"}
            tracer.start_span("t", attributes=tool).end()
    provider.shutdown()
    server.settled()  # 200 means stored or spooled: what was spooled is stored once drained
    bad = httpx.post(server.endpoint, content=b"x", headers={"content-type": "text/csv"})
    assert bad.status_code == 415
    samples = _samples(server.endpoint)
    with open_store(url) as store:
        events = store.reader.counts()["events"]
    assert samples[("agentdocket_spans_received_total", ())] == 2 * RUNS
    assert samples[("agentdocket_requests_total", ())] == 2 * RUNS  # a span per request
    stored = samples[("agentdocket_events_stored_total", (("path", "direct"),))]
    replayed = samples[("agentdocket_events_stored_total", (("path", "replayed"),))]
    assert stored + replayed == events == samples[("agentdocket_events_received_total", ())]
    assert samples[("agentdocket_requests_rejected_total", (("status", "415"),))] == 1
    assert samples[("agentdocket_events_dead_lettered_total", ())] == 0
    assert samples[("agentdocket_spool_bytes", ())] == 0
    assert samples[("agentdocket_requests_in_flight", ())] == 0
