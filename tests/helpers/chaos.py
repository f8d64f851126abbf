"""Traffic for the chaos tests: traces made once by the SDK and sent in batches by the stock
OTLP exporter from a thread, remembering which the receiver acknowledged; then what a test
checks afterwards (the spool replayed, every acknowledged trace stored once and whole)."""

from __future__ import annotations

import threading
import time

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentdocket.store import open_store
from tests.helpers.otlp_server import Server

EVENTS_PER_TRACE = 6  # an agent span and two tool spans


def traces(count: int, service: str = "chaos") -> list[list[ReadableSpan]]:
    """Finished spans, a list per trace, made once by the SDK (sent later, in batches)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("chaos")
    for i in range(count):
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


class Traffic:
    """Sends ``batches`` (lists of traces) to a receiver from a thread, ``pause`` seconds
    apart (a steady client, not a flood); ``acknowledged``: the trace ids it took."""

    def __init__(self, endpoint: str, batches: list[list[list[ReadableSpan]]], pause: float):
        self.exporter = OTLPSpanExporter(endpoint=endpoint, timeout=30)
        self.batches = batches
        self.pause = pause
        self.acknowledged: list[str] = []
        self.sent = 0  # batches sent so far
        self.finished = threading.Event()
        self.thread = threading.Thread(target=self._send, daemon=True)

    def start(self) -> Traffic:
        self.thread.start()
        return self

    def _send(self) -> None:
        try:
            for batch in self.batches:
                spans = [s for trace in batch for s in trace]
                if self.exporter.export(spans) is SpanExportResult.SUCCESS:
                    self.acknowledged.extend(
                        f"{trace[0].context.trace_id:032x}"  # type: ignore[union-attr]
                        for trace in batch
                    )
                self.sent += 1
                time.sleep(self.pause)
        finally:
            self.finished.set()

    def join(self, seconds: float) -> None:
        self.thread.join(seconds)
        assert self.finished.is_set(), "the client did not finish"
        self.exporter.shutdown()


def batches(all_traces: list[list[ReadableSpan]], per_batch: int) -> list[list[list[ReadableSpan]]]:
    return [all_traces[i : i + per_batch] for i in range(0, len(all_traces), per_batch)]


def health(server: Server) -> dict[str, object]:
    reply = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=10)
    result = reply.json()
    assert isinstance(result, dict)
    return result


def drained(server: Server, seconds: float = 60.0) -> None:
    """Wait until the receiver has replayed its spool into a reachable database."""
    deadline = time.monotonic() + seconds  # the spool is replayed in the background
    while health(server)["spooled"] or health(server)["database"] != "reachable":
        assert time.monotonic() < deadline, health(server)
        time.sleep(0.2)


def check_stored_once(url: str, acknowledged: list[str], log: str) -> None:
    """Every acknowledged trace is stored, once and whole, and no record became a dead
    letter."""
    with open_store(url) as store:
        counts = dict(
            store.recorder.read("SELECT trace_id, count(*) FROM events GROUP BY trace_id")  # type: ignore[arg-type]
        )
        stored = {r["trace_id"] for r in store.reader.list_runs(limit=None)}
        assert store.dead_letters.counts()["total"] == 0, store.dead_letters.letters()
    missing = [t for t in acknowledged if t not in stored]
    assert not missing, f"{len(missing)} acknowledged traces were lost\n{log}"
    assert {counts[t] for t in acknowledged} == {EVENTS_PER_TRACE}  # once each, and whole
