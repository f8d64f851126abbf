"""`agentdocket serve` with real clients: the OpenTelemetry SDK's OTLP/HTTP exporter and
OpenInference's LangChain instrumentation, against a real server process, on both databases;
the HTTP contract (401, 413, 415, 400, 503, /healthz); a restart mid-stream; redaction."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from starlette.testclient import TestClient

from agentdocket.cli import main
from agentdocket.ingest.sink import Sink
from agentdocket.runtime.otlp_http import Receiver
from agentdocket.store import open_store
from tests.helpers.db import assert_absent, cli
from tests.helpers.fresh import EVERY, fresh_url
from tests.helpers.otlp_server import START_NS, Server, free_port, start_cli


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    """Each kind of database, a Citus cluster's too."""
    return fresh_url(request)


OPENAI_KEY = "sk-proj-Zq8T3xLw0aVbN4mR7yCe2uKd"


@pytest.fixture
def server(url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(url, tmp_path / "spool").start()
    yield s
    s.stop()


def _provider(endpoint: str, batch: bool = False, **exporter: Any) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-svc"}))
    otlp = OTLPSpanExporter(endpoint=endpoint, **exporter)
    if batch:  # small batches, sent often: the stream is under way when the receiver dies
        processor: Any = BatchSpanProcessor(
            otlp, schedule_delay_millis=50, max_export_batch_size=16
        )
    else:
        processor = SimpleSpanProcessor(otlp)
    provider.add_span_processor(processor)
    return provider


def _events(url: str) -> list[tuple[str, str, dict[str, Any]]]:
    with open_store(url) as store:
        rows = store.recorder.read("SELECT trace_id, kind, payload FROM events ORDER BY ts, seq")
    return [(r[0], r[1], r[2] if isinstance(r[2], dict) else orjson.loads(r[2])) for r in rows]


# --- the OTel SDK's own exporter --------------------------------------------------------------


def test_genai_spans_from_the_sdk_exporter_arrive_as_events(server: Server, url: str) -> None:
    provider = _provider(server.endpoint)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "invoke_agent bot",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"},
    ):
        with tracer.start_as_current_span(
            "chat gpt-x",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-x",
                "gen_ai.system": "openai",  # deprecated name of the provider
                "gen_ai.prompt.0.role": "user",  # deprecated indexed messages
                "gen_ai.prompt.0.content": "weather in Paris?",
                "gen_ai.usage.prompt_tokens": 7,  # deprecated name
                "gen_ai.output.messages": orjson.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {
                                    "type": "tool_call",
                                    "id": "call_9",
                                    "name": "get_weather",
                                    "arguments": {"city": "Paris"},
                                }
                            ],
                        }
                    ]
                ).decode(),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_9",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": '"18 C"',
            },
        ):
            pass
        with tracer.start_as_current_span("GET /weather", attributes={"http.method": "GET"}):
            pass
    provider.shutdown()
    by_kind: dict[str, list[dict[str, Any]]] = {}
    server.settled()
    for _, kind, payload in _events(url):
        by_kind.setdefault(kind, []).append(payload)
    assert by_kind["run.started"][0]["agent"] == "bot"
    llm = by_kind["llm.called"][0]
    assert (llm["model"], llm["input_tokens"], llm["attributes"]["provider"]) == (
        "gpt-x",
        7,
        "openai",
    )
    assert [(m["role"], m["content"]) for m in llm["input_messages"]] == [
        ("user", "weather in Paris?")
    ]
    assert by_kind["plan"][0]["steps"] == [
        {"tool": "get_weather", "text": None, "arguments": {"city": "Paris"}, "call_id": "call_9"}
    ]
    assert by_kind["tool.called"][0] == {
        "call_id": "call_9",
        "tool": "get_weather",
        "arguments": {"city": "Paris"},
    }
    assert by_kind["tool.returned"][0]["result"] == "18 C"
    # A span no convention claims is kept as a generic step.
    [step] = by_kind["step"]
    assert step["name"] == "GET /weather" and step["attributes"]["http.method"] == "GET"
    assert len({trace for trace, _, _ in _events(url)}) == 1


# --- OpenInference-instrumented LangChain, scored -----------------------------------------------


def test_openinference_langchain_runs_are_scored(server: Server, url: str) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from tests.helpers.langchain_agent import weather_agent, weather_dataset

    with open_store(url) as store:
        store.datasets.register(weather_dataset())
    provider = _provider(server.endpoint)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        # Paris: right tool, right city. Rome: the model asks for Milan.
        for case, city in (("paris", "Paris"), ("rome", "Milan")):
            agent = weather_agent(city).with_config(
                metadata={"agentdocket.dataset": "weather", "agentdocket.case_id": case}
            )
            assert agent.invoke(f"Weather in {case.title()}?").startswith("It is 18 C")
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    cli(url, "score", "--dataset", "weather", "--scorer", "planner.suffix_match")
    cli(url, "score", "--dataset", "weather", "--scorer", "tools.slot_fill")
    with open_store(url) as store:
        runs = {r["case_id"]: r for r in store.reader.list_runs(dataset="weather")}
        assert set(runs) == {"paris", "rome"}
        assert runs["paris"]["agent"] == "weather-agent"  # the runnable's name, not the service
        verdicts = store.scoring.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset="weather"
        )
    got = {(runs_by_trace(runs)[v.trace_id], v.scorer): v for v in verdicts}
    assert got[("paris", "planner.suffix_match")].passed
    assert got[("paris", "tools.slot_fill")].passed
    assert got[("rome", "planner.suffix_match")].passed
    rome = got[("rome", "tools.slot_fill")]
    assert not rome.passed and rome.failure_type == "slot_fill:wrong_argument"


def runs_by_trace(runs: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {r["trace_id"]: case for case, r in runs.items()}


# --- restart mid-stream -----------------------------------------------------------------------


def test_spans_arrive_exactly_once_across_a_restart(
    server: Server, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The client keeps exporting while the receiver is killed and started again; it retries
    what failed, and every span's events are stored once."""
    provider = _provider(server.endpoint, batch=True, timeout=30)
    tracer = provider.get_tracer("test")
    n_runs, stop = 60, threading.Event()

    def produce() -> None:
        for i in range(n_runs):
            with tracer.start_as_current_span(
                f"run {i}", attributes={"openinference.span.kind": "AGENT", "input.value": str(i)}
            ):
                for j in range(3):
                    with tracer.start_as_current_span(
                        "tool",
                        attributes={
                            "openinference.span.kind": "TOOL",
                            "tool.name": "t",
                            "input.value": orjson.dumps({"j": j}).decode(),
                        },
                    ):
                        pass
            time.sleep(0.02)
            if stop.is_set():
                return

    producer = threading.Thread(target=produce)
    producer.start()
    time.sleep(0.4)
    server.restart()  # SIGKILL, then a new process on the same port
    producer.join(60)
    assert provider.force_flush(60_000)
    provider.shutdown()
    with open_store(url) as store:
        counts = store.reader.counts()
        kinds = dict(
            store.recorder.read("SELECT kind, count(*) FROM events GROUP BY kind")  # type: ignore[arg-type]
        )
    # The client met the dead receiver and retried.
    assert any("retrying" in r.getMessage() for r in caplog.records)
    # Per run: started and finished; per tool span: called and returned; each exactly once.
    assert counts["runs"] == n_runs
    assert kinds == {
        "run.started": n_runs,
        "run.finished": n_runs,
        "tool.called": 3 * n_runs,
        "tool.returned": 3 * n_runs,
    }


# --- the HTTP contract, in process ------------------------------------------------------------


@pytest.fixture
def receiver(sqlite_url: str, tmp_path: Path) -> Iterator[Receiver]:
    sink = Sink(sqlite_url, spool_dir=tmp_path / "spool")
    yield Receiver(sink, token="s3cret", max_body=4096)
    sink.close()


def _request(trace_id: str = "5b8efff798038103d269b633813fc60c") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": "eee19b7ec3c1b174",
                                "name": "search",
                                "startTimeUnixNano": str(START_NS),
                                "endTimeUnixNano": START_NS + 500_000_000,
                                "attributes": [
                                    {
                                        "key": "openinference.span.kind",
                                        "value": {"stringValue": "TOOL"},
                                    },
                                    {"key": "tool.name", "value": {"stringValue": "search"}},
                                    {"key": "n", "value": {"intValue": "3"}},
                                ],
                                "status": {"code": 2, "message": "boom"},
                            }
                        ]
                    }
                ],
            }
        ]
    }


AUTH = {"Authorization": "Bearer s3cret"}


def _post(client: TestClient, body: bytes, **headers: str) -> httpx.Response:
    return client.post("/v1/traces", content=body, headers={**AUTH, **headers})


def test_json_and_gzip_are_accepted_and_errors_are_clear(
    receiver: Receiver, sqlite_url: str
) -> None:
    client = TestClient(receiver.app)
    body = orjson.dumps(_request())
    r = _post(
        client,
        gzip.compress(body),
        **{"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert (r.status_code, r.json()) == (200, {})
    [(_, called, payload), (_, returned, result)] = _events(sqlite_url)
    assert (called, payload["tool"]) == ("tool.called", "search")
    assert (returned, result["error"]) == ("tool.returned", "boom")
    # The same batch again adds nothing.
    assert _post(client, body, **{"content-type": "application/json"}).status_code == 200
    assert len(_events(sqlite_url)) == 2

    r = client.post("/v1/traces", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    r = _post(client, body, **{"content-type": "text/plain"})
    assert r.status_code == 415 and "application/x-protobuf" in r.json()["message"]
    r = _post(client, body, **{"content-type": "application/json", "content-encoding": "br"})
    assert r.status_code == 415
    bad = _request("5b8e")
    r = _post(client, orjson.dumps(bad), **{"content-type": "application/json"})
    assert r.status_code == 400
    assert r.json()["message"] == (
        "resourceSpans[0].scopeSpans[0].spans[0].traceId: expected 32 hex digits"
    )
    r = _post(client, b"\x0a\xff\xff", **{"content-type": "application/x-protobuf"})
    assert r.status_code == 400 and r.headers["content-type"] == "application/x-protobuf"
    r = _post(client, b"x" * 5000, **{"content-type": "application/json"})
    assert r.status_code == 413
    bomb = gzip.compress(b" " * 100_000)  # small on the wire, over the limit inflated
    r = _post(client, bomb, **{"content-type": "application/json", "content-encoding": "gzip"})
    assert r.status_code == 413 and "inflated" in r.json()["message"]
    assert len(_events(sqlite_url)) == 2
    health = client.get("/healthz").json()
    assert health["database"] == "reachable" and health["spooled"] is False


def test_back_pressure_and_nowhere_to_keep_a_batch_are_503(tmp_path: Path) -> None:
    body = orjson.dumps(_request())
    json_type = {"content-type": "application/json"}
    sink = Sink(f"sqlite:///{tmp_path / 'x.db'}", spool_dir=tmp_path / "spool")
    busy = Receiver(sink, max_pending=1)
    busy.pending = 1  # one request in flight
    r = TestClient(busy.app).post("/v1/traces", content=body, headers=json_type)
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    sink.close()

    def away() -> Any:
        raise OSError("database away")

    # Database away, spool full: the batch cannot be kept, so it is not acknowledged.
    sink = Sink(
        "sqlite:///unused.db", spool_dir=tmp_path / "s2", spool_max_bytes=10, store_factory=away
    )
    r = TestClient(Receiver(sink).app).post("/v1/traces", content=body, headers=json_type)
    assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
    assert sink.stats.dropped == {}  # the client still holds the batch
    sink.close()
    # Database away, spool writable: acknowledged once spooled.
    sink = Sink("sqlite:///unused.db", spool_dir=tmp_path / "s3", store_factory=away)
    r = TestClient(Receiver(sink).app).post("/v1/traces", content=body, headers=json_type)
    assert r.status_code == 200 and sink.spool.pending()
    sink.close()


def test_serving_off_loopback_needs_a_token(sqlite_url: str) -> None:
    result = CliRunner().invoke(main, ["--database", sqlite_url, "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "needs a bearer token" in result.output
    # a blank token given is an error, never a way to turn authentication off (on loopback too)
    for blank in ("", "  "):
        result = CliRunner().invoke(main, ["--database", sqlite_url, "serve", "--token", blank])
        assert result.exit_code == 1 and "is blank" in result.output, result.output


def test_a_second_serve_on_a_held_grpc_port_exits_saying_so(
    sqlite_url: str, tmp_path: Path
) -> None:
    first = Server(sqlite_url, tmp_path / "spool-a", grpc=True).start()
    try:
        second = start_cli(
            sqlite_url,
            tmp_path / "second.log",
            "serve",
            "--port",
            str(free_port()),
            "--grpc-port",
            str(first.grpc_port),
            "--spool-dir",
            str(tmp_path / "spool-b"),
        )
        assert second.wait(60) == 1
        log = (tmp_path / "second.log").read_text()
        assert f"cannot listen for OTLP/gRPC on 127.0.0.1:{first.grpc_port}" in log, log
    finally:
        first.stop()


def test_a_secret_sent_to_the_receiver_never_reaches_the_database(
    receiver: Receiver, sqlite_url: str
) -> None:
    request = _request()
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] += [
        {"key": "input.value", "value": {"stringValue": f'{{"q": "x", "key": "{OPENAI_KEY}"}}'}},
        {"key": "http.request.header.authorization", "value": {"stringValue": "Basic abc"}},
    ]
    client = TestClient(receiver.app)
    r = _post(client, orjson.dumps(request), **{"content-type": "application/json"})
    assert r.status_code == 200
    assert_absent(sqlite_url, OPENAI_KEY)


def test_a_failing_tools_message_comes_from_its_exception_event(server: Server, url: str) -> None:
    """Instrumentations often set an error status with no description and record the text only
    as the span's ``exception`` event: the tool's error is that text, through protobuf and
    JSON."""
    from opentelemetry.trace import Status, StatusCode

    provider = _provider(server.endpoint)
    tracer = provider.get_tracer("test")
    with (
        tracer.start_as_current_span(
            "invoke_agent bot",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bot"},
        ),
        tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1",
            },
        ) as span,
    ):
        span.record_exception(ValueError("no city named Atlantis"))
        span.set_status(Status(StatusCode.ERROR))
    provider.shutdown()
    request = _request("7b8efff798038103d269b633813fc60c")
    json_span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    json_span["status"] = {"code": 2}
    json_span["events"] = [
        {"name": "log", "attributes": []},
        {
            "name": "exception",
            "timeUnixNano": str(START_NS + 400_000_000),
            "attributes": [
                {"key": "exception.type", "value": {"stringValue": "TimeoutError"}},
                {"key": "exception.message", "value": {"stringValue": "search took 30 s"}},
            ],
        },
    ]
    reply = httpx.post(
        server.endpoint, content=orjson.dumps(request), headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200, reply.text
    server.settled()
    errors = sorted(p["error"] for _, kind, p in _events(url) if kind == "tool.returned")
    assert errors == ["TimeoutError: search took 30 s", "ValueError: no city named Atlantis"]


def test_genai_tool_results_and_system_instructions_are_kept(server: Server, url: str) -> None:
    """A ``tool_call_response`` part is the tool's result handed back to the model (a tool
    message with that text, not an empty user message); ``gen_ai.system_instructions`` is the
    conversation's system message."""
    provider = _provider(server.endpoint)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "chat gpt-x",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-x",
            "gen_ai.system_instructions": orjson.dumps(
                [{"type": "text", "content": "Answer in one sentence."}]
            ).decode(),
            "gen_ai.input.messages": orjson.dumps(
                [
                    {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
                    {
                        "role": "assistant",
                        "parts": [
                            {
                                "type": "tool_call",
                                "id": "call_1",
                                "name": "get_weather",
                                "arguments": {"city": "Paris"},
                            }
                        ],
                    },
                    {"parts": [{"type": "tool_call_response", "id": "call_1", "response": "18 C"}]},
                ]
            ).decode(),
        },
    ):
        pass
    provider.shutdown()
    server.settled()
    [llm] = [p for _, kind, p in _events(url) if kind == "llm.called"]
    assert [(m["role"], m["content"]) for m in llm["input_messages"]] == [
        ("system", "Answer in one sentence."),
        ("user", "Weather in Paris?"),
        ("assistant", ""),
        ("tool", "18 C"),
    ]
    assert llm["input_messages"][2]["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}
    ]


def test_keyword_wrapped_arguments_and_metadata_ids_are_unwrapped(server: Server, url: str) -> None:
    """LlamaIndex records a tool's input as ``{"args": [], "kwargs": {...}}``, and frameworks
    keep a retrieved document's id and score in its metadata: both are read by name."""
    provider = _provider(server.endpoint)
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "agent", attributes={"openinference.span.kind": "AGENT", "input.value": "Paris?"}
    ):
        with tracer.start_as_current_span(
            "get_weather",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": '{"args": [], "kwargs": {"city": "Paris"}}',
                "output.value": "18 C",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": "paris weather",
                "retrieval.documents.0.document.content": "Paris is mild.",
                "retrieval.documents.0.document.metadata": '{"doc_id": "wiki-paris", "score": 0.8}',
                "retrieval.documents.1.document.content": "Lyon is warm.",
                "retrieval.documents.1.document.id": "wiki-lyon",
                "retrieval.documents.1.document.score": 0.4,
            },
        ):
            pass
    provider.shutdown()
    server.settled()
    events = _events(url)
    [called] = [p for _, kind, p in events if kind == "tool.called"]
    assert called["arguments"] == {"city": "Paris"}
    [retrieval] = [p for _, kind, p in events if kind == "retrieval"]
    assert [(d["id"], d["score"]) for d in retrieval["documents"]] == [
        ("wiki-paris", 0.8),
        ("wiki-lyon", 0.4),
    ]
