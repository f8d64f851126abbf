"""OTLP over gRPC: the stock gRPC exporter delivers through it, and a refused call gets the
code the OTLP specification names (with retry details where retrying helps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

from agentdocket.ingest.sink import Sink
from agentdocket.runtime.otlp_grpc import SERVICE, GrpcReceiver
from agentdocket.runtime.otlp_http import Receiver
from agentdocket.store import open_store
from tests.helpers.fresh import EVERY, fresh_url


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


TOKEN = "s3cret-token"


def _receiver(url: str, tmp_path: Path, **options: Any) -> tuple[Sink, GrpcReceiver]:
    sink = Sink(url, spool_dir=tmp_path / "spool", source="receiver")
    return sink, GrpcReceiver(Receiver(sink, **options), "127.0.0.1", 0).start()


def _spans(exporter: OTLPSpanExporter) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    root = {
        "openinference.span.kind": "AGENT",
        "agent.name": "weather",
        "input.value": "Weather in Paris?",
        "output.value": "18 C",
    }
    with tracer.start_as_current_span("agent", attributes=root):
        tool = {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_weather",
            "input.value": '{"city": "Paris"}',
            "output.value": "18 C",
        }
        tracer.start_span("get_weather", attributes=tool).end()
    provider.shutdown()


def test_the_stock_grpc_exporter_delivers(url: str, tmp_path: Path) -> None:
    sink, server = _receiver(url, tmp_path)
    try:
        _spans(OTLPSpanExporter(endpoint=f"127.0.0.1:{server.port}", insecure=True))
    finally:
        server.stop(5)
        sink.close()
    with open_store(url) as store:
        [run] = store.reader.list_runs(limit=None)
        trace = store.reader.read_trace(run["trace_id"])
    assert trace is not None and run["agent"] == "weather"
    assert trace.question == "Weather in Paris?" and trace.response == "18 C"
    [call] = trace.tool_calls()
    assert (call.tool, call.arguments, call.result) == ("get_weather", {"city": "Paris"}, "18 C")
    assert server.receiver.stats.spans == 2


def _call(port: int, body: bytes, token: str | None = TOKEN) -> grpc.RpcError | None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(f"/{SERVICE}/Export")
        metadata = (("authorization", f"Bearer {token}"),) if token else None
        try:
            export(body, metadata=metadata, timeout=10)
        except grpc.RpcError as exc:
            return exc
    return None


def test_refused_calls_get_the_otlp_codes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    sink, server = _receiver(url, tmp_path, token=TOKEN, max_body=4096, max_pending=1)
    try:
        missing = _call(server.port, b"", token=None)
        assert missing is not None and missing.code() is grpc.StatusCode.UNAUTHENTICATED
        wrong = _call(server.port, b"", token="nope")
        assert wrong is not None and wrong.code() is grpc.StatusCode.UNAUTHENTICATED
        corrupt = _call(server.port, b"\x0a\x32ab")  # a field announced 50 bytes long, 2 there
        assert corrupt is not None and corrupt.code() is grpc.StatusCode.INVALID_ARGUMENT
        bad = _call(server.port, _short_trace_id())
        assert bad is not None and bad.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert (bad.details() or "").startswith("resourceSpans[0].scopeSpans[0].spans[0].traceId")
        big = _call(server.port, b"\x0a\x80\x40" + b"x" * 8192)
        assert big is not None and big.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        server.receiver.pending = 1  # one call in flight: the next waits
        busy = _call(server.port, b"")
        assert busy is not None and busy.code() is grpc.StatusCode.UNAVAILABLE
        details = dict(busy.trailing_metadata() or ())["google.rpc.retryinfo-bin"]
        assert RetryInfo.FromString(details).retry_delay.seconds == 1
        server.receiver.pending = 0
        assert _call(server.port, b"") is None  # an empty request: nothing to store, OK
        # the stock exporter, with the token in its headers
        exporter = OTLPSpanExporter(
            endpoint=f"127.0.0.1:{server.port}",
            insecure=True,
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        _spans(exporter)
        no_token = OTLPSpanExporter(endpoint=f"127.0.0.1:{server.port}", insecure=True)
        # refused as unauthenticated at once: not a code the exporter retries
        assert no_token.export([]) is SpanExportResult.FAILURE
    finally:
        server.stop(5)
        sink.close()
    with open_store(url) as store:
        assert len(store.reader.list_runs(limit=None)) == 1
    rejected = server.receiver.stats.rejected
    assert rejected == {401: 3, 400: 2, 503: 1}, orjson.dumps(rejected)


def _short_trace_id() -> bytes:
    """A well-formed request whose one span has a 3-byte trace id."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"abc", b"\x01" * 8, "x"
    return bytes(request.SerializeToString())
