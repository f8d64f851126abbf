"""OTLP logs on `agentdocket serve`: the GenAI conventions' content events sent as log records by
the SDK's stock log exporters (HTTP and gRPC), joined to their spans whichever arrives first;
the same durability, auth and error rules as traces. Evaluations made elsewhere
(``gen_ai.evaluation.result``, on a span or as a log record) become verdicts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogs
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentdocket.store import open_store
from tests.helpers.otlp_server import Server

QUESTION = "What is the weather in Paris?"
ANSWER = "It is 18 C in Paris."


@pytest.fixture
def server(url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(url, tmp_path / "spool", grpc=True).start()
    yield s
    s.stop()


def _choice(message: dict[str, Any]) -> dict[str, Any]:
    return {"index": 0, "finish_reason": "stop", "message": message}


CALL_WEATHER = {
    "role": "assistant",
    "tool_calls": [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}


@pytest.mark.parametrize("transport", ["http", "grpc"])
def test_content_in_log_records_joins_its_spans_whichever_comes_first(
    server: Server, url: str, transport: str
) -> None:
    """The older event form (one record per message, as opentelemetry-instrumentation-openai-v2
    sends them): the run's question, answer and plan come from the records, sent before the
    spans."""
    resource = Resource.create({"service.name": "weather-svc"})
    spans, logs = TracerProvider(resource=resource), LoggerProvider(resource=resource)
    if transport == "grpc":
        spans.add_span_processor(
            SimpleSpanProcessor(GrpcSpans(endpoint=server.grpc_endpoint, insecure=True))
        )
        log_exporter: Any = GrpcLogs(endpoint=server.grpc_endpoint, insecure=True)
    else:
        spans.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
        log_exporter = OTLPLogExporter(endpoint=server.endpoint.replace("/v1/traces", "/v1/logs"))
    logs.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    tracer, logger = spans.get_tracer("agent"), logs.get_logger("openai_v2")
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-1"}
    # Log records are exported as they are emitted, before the spans they name (spans are
    # exported when they end).
    with tracer.start_as_current_span(
        "invoke_agent weather",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    ) as root:
        with tracer.start_as_current_span("chat scripted-1", attributes=chat):
            logger.emit(event_name="gen_ai.user.message", body={"content": QUESTION})
            logger.emit(event_name="gen_ai.choice", body=_choice(CALL_WEATHER))
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": "18 C in Paris",
            },
        ):
            pass
        with tracer.start_as_current_span("chat scripted-1", attributes=chat):
            logger.emit(event_name="gen_ai.user.message", body={"content": QUESTION})
            logger.emit(event_name="gen_ai.tool.message", body={"content": "18 C", "id": "call_1"})
            logger.emit(
                event_name="gen_ai.choice",
                body=_choice({"role": "assistant", "content": ANSWER}),
            )
        trace_id = format(root.get_span_context().trace_id, "032x")
    logs.shutdown()
    spans.shutdown()
    server.settled()  # a 200 may mean spooled (the database busy a moment): stored once drained
    with open_store(url) as store:
        run = store.reader.run(trace_id)
        stored = store.reader.read_trace(trace_id)
    assert run is not None and stored is not None
    assert (run["agent"], run["question"], run["answer"]) == ("weather", QUESTION, ANSWER)
    assert [(p.tool, p.arguments, p.call_id) for p in stored.plan()] == [
        ("get_weather", {"city": "Paris"}, "call_1")
    ]
    [call] = stored.tool_calls()
    assert (call.arguments, call.result) == ({"city": "Paris"}, "18 C in Paris")
    # one event per request: this exporter sends each record as it is emitted
    messages = [m for e in stored.of_kind("llm.messages") for m in e.payload["input_messages"]]
    assert {"role": "tool", "content": "18 C", "name": None, "tool_calls": []} in messages
    assert len(stored.of_kind("llm.messages")) == 5
    assert trace.get_current_span() is trace.INVALID_SPAN


def _logs_body(record: dict[str, Any]) -> bytes:
    return orjson.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]})


def test_a_malformed_log_record_is_a_400_naming_its_place(server: Server, url: str) -> None:
    endpoint = server.endpoint.replace("/v1/traces", "/v1/logs")
    headers = {"Content-Type": "application/json"}
    bad = {"traceId": "ab" * 16, "spanId": "abc", "eventName": "gen_ai.choice"}
    reply = httpx.post(endpoint, content=_logs_body(bad), headers=headers)
    assert reply.status_code == 400
    assert "resourceLogs[0].scopeLogs[0].logRecords[0].spanId" in reply.json()["message"]
    bad = {"traceId": "ab" * 16, "spanId": "cd" * 8, "body": {"kvlistValue": {"values": 3}}}
    reply = httpx.post(endpoint, content=_logs_body(bad), headers=headers)
    assert reply.status_code == 400
    assert "logRecords[0].body" in reply.json()["message"]
    reply = httpx.post(endpoint, content=b"{}", headers={"Content-Type": "text/plain"})
    assert reply.status_code == 415
    # an application's own log line, with no span to join: acknowledged, not kept
    plain = {"body": {"stringValue": "started"}, "observedTimeUnixNano": "1"}
    reply = httpx.post(endpoint, content=_logs_body(plain), headers=headers)
    assert reply.status_code == 200
    with open_store(url) as store:
        assert store.reader.counts()["events"] == 0


def test_logs_need_the_token_as_traces_do(url: str, tmp_path: Path) -> None:
    s = Server(url, tmp_path / "spool", "--token", "s3cret").start()
    try:
        endpoint = s.endpoint.replace("/v1/traces", "/v1/logs")
        headers = {"Content-Type": "application/json"}
        reply = httpx.post(endpoint, content=b"{}", headers=headers)
        assert reply.status_code == 401
        reply = httpx.post(
            endpoint, content=b"{}", headers={**headers, "Authorization": "Bearer s3cret"}
        )
        assert reply.status_code == 200
    finally:
        s.stop()


# --- evaluations made elsewhere ---------------------------------------------------------------


def test_evaluations_on_spans_and_in_log_records_become_verdicts(server: Server, url: str) -> None:
    resource = Resource.create({"service.name": "weather-svc"})
    spans, logs = TracerProvider(resource=resource), LoggerProvider(resource=resource)
    spans.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
    logs.add_log_record_processor(
        SimpleLogRecordProcessor(
            OTLPLogExporter(endpoint=server.endpoint.replace("/v1/traces", "/v1/logs"))
        )
    )
    tracer, logger = spans.get_tracer("agent"), logs.get_logger("evaluator")
    with tracer.start_as_current_span(
        "invoke_agent weather",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"},
    ) as root:
        root.add_event(
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "relevance",
                "gen_ai.evaluation.score.value": 0.25,
                "gen_ai.evaluation.score.label": "fail",
                "gen_ai.evaluation.explanation": "talks about Rome",
            },
        )
        logger.emit(
            event_name="gen_ai.evaluation.result",
            attributes={
                "gen_ai.evaluation.name": "helpfulness",
                "gen_ai.evaluation.score.value": 0.9,
            },
        )
        trace_id = format(root.get_span_context().trace_id, "032x")
        span_id = format(root.get_span_context().span_id, "016x")
    logs.shutdown()
    spans.shutdown()
    server.settled()  # a 200 may mean spooled (the database busy a moment): stored once drained
    with open_store(url) as store:
        reported = store.scoring.report_verdicts(
            {"external.relevance": "external", "external.helpfulness": "external"}
        )
        rows = store.reader.rows("verdicts", "scorer")
    assert {(v.trace_id, v.scorer) for v in reported} == {
        (trace_id, "external.relevance"),
        (trace_id, "external.helpfulness"),
    }
    got = {r["scorer"]: r for r in rows}
    relevance, helpfulness = got["external.relevance"], got["external.helpfulness"]
    assert (relevance["passed"], relevance["score"], relevance["label"]) == (False, 0.25, "fail")
    assert relevance["rationale"] == "talks about Rome"
    assert relevance["subject_span_id"] is None  # about the run, as reports read verdicts
    assert relevance["details"]["span_id"] == span_id
    assert (helpfulness["passed"], helpfulness["score"]) == (None, 0.9)


def test_a_malformed_evaluation_is_a_400_naming_its_place(server: Server, url: str) -> None:
    headers = {"Content-Type": "application/json"}
    ids = {"traceId": "ab" * 16, "spanId": "cd" * 8}
    unnamed = [{"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 1.0}}]
    record = {**ids, "eventName": "gen_ai.evaluation.result", "attributes": unnamed}
    endpoint = server.endpoint.replace("/v1/traces", "/v1/logs")
    reply = httpx.post(endpoint, content=_logs_body(record), headers=headers)
    assert reply.status_code == 400
    assert (
        "logRecords[0]: gen_ai.evaluation.result needs gen_ai.evaluation.name"
        in (reply.json()["message"])
    )
    span = {
        **ids,
        "name": "invoke_agent weather",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "events": [{"name": "gen_ai.evaluation.result", "attributes": unnamed}],
    }
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})
    reply = httpx.post(server.endpoint, content=body, headers=headers)
    assert reply.status_code == 400
    assert "spans[0].events[0]: gen_ai.evaluation.result needs" in reply.json()["message"]
    with open_store(url) as store:
        assert store.reader.counts()["events"] == 0
