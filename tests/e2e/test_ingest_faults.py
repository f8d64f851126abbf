"""Faults in ingestion, through the real paths: ``agentdocket serve`` (protobuf from the stock
OTLP exporter, and JSON), the in-process tracer, ``import traces``, and a spool shared by two
processes. Text PostgreSQL cannot hold is stored intact; a record the database refuses is a
dead letter while everything around it is stored; ``serve`` shuts down cleanly on SIGTERM."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from agentdocket.importers.interchange_export import export_records
from agentdocket.store import open_store
from agentdocket.tracer import CountingBatchSpanProcessor, StoreSpanExporter, Tracer
from tests.helpers.db import accept_events_again, cli, refuse_events_containing
from tests.helpers.factory import awkward_run_events, run_events
from tests.helpers.otlp_server import START_NS, Server

NUL_QUESTION = "what is\x00this?"
NUL_RESULT = "row\x00one"
NUL_MESSAGE = "hi\x00there"
NUL_ATTRIBUTE = "attr\x00value"


@pytest.fixture
def server(pg_url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(pg_url, tmp_path / "spool").start()
    yield s
    s.stop()


def _health(server: Server) -> dict[str, Any]:
    reply = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=10).json()
    assert isinstance(reply, dict)
    return reply


def _record(server: Server, run: str, *, nul: bool = False, marker: str = "") -> None:
    """One agent run as OpenInference spans, through the stock OTLP/HTTP (protobuf) exporter:
    a tool, an LLM call with a message, and a span no convention claims (kept as a step)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "faults"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
    tracer = provider.get_tracer("test")
    text = (lambda s: s) if nul else (lambda s: s.replace("\x00", " "))
    with tracer.start_as_current_span(
        f"agent {run}",
        attributes={
            "openinference.span.kind": "AGENT",
            "input.value": text(NUL_QUESTION),
            "output.value": "done",
        },
    ):
        with tracer.start_as_current_span(
            "lookup",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": json.dumps({"q": run}),
                "output.value": text(NUL_RESULT) + marker,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "m",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": text(NUL_MESSAGE),
            },
        ):
            pass
        with tracer.start_as_current_span("cache get", attributes={"note": text(NUL_ATTRIBUTE)}):
            pass
    provider.shutdown()


def _nul_record(url: str, trace_id: str) -> dict[str, Any]:
    with open_store(url) as store:
        [record] = [r for r in export_records(store) if r["trace_id"] == trace_id]
    return record


def _payloads(record: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s["payload"] for s in record["steps"] if s["kind"] == kind]


def _questions(url: str) -> dict[str, str]:
    with open_store(url) as store:
        return {r["trace_id"]: r["question"] for r in store.reader.list_runs(limit=None)}


def test_nul_through_serve_protobuf_and_json_then_normal_traffic(
    server: Server, pg_url: str
) -> None:
    _record(server, "nul", nul=True)
    body = _json_request(NUL_RESULT)
    reply = httpx.post(
        server.endpoint, content=json.dumps(body), headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200, reply.text
    for i in range(20):
        _record(server, f"normal {i}")
    questions = _questions(pg_url)
    # the NUL run and 20 normal runs; the JSON request's lone tool span is stored, no run
    assert len(questions) == 21
    [nul_trace] = [t for t, q in questions.items() if q == NUL_QUESTION]
    record = _nul_record(pg_url, nul_trace)
    assert _payloads(record, "tool.returned")[0]["result"] == NUL_RESULT
    [llm] = _payloads(record, "llm.called")
    assert llm["input_messages"][0]["content"] == NUL_MESSAGE
    [step] = _payloads(record, "step")
    assert step["attributes"]["note"] == NUL_ATTRIBUTE
    json_record = _nul_record(
        pg_url, body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    )
    assert _payloads(json_record, "tool.returned")[0]["result"] == NUL_RESULT
    health = _health(server)
    assert health["database"] == "reachable"
    assert health["dead_letters"] == {"total": 0, "unresolved": 0}


def _json_request(result: str) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "json"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "7a3e0d1c9b8f4e2a6d5c4b3a29180716",
                                "spanId": "1c2d3e4f5a6b7c8d",
                                "name": "lookup",
                                "startTimeUnixNano": str(START_NS),
                                "endTimeUnixNano": str(START_NS + 500_000_000),
                                "attributes": [
                                    {
                                        "key": "openinference.span.kind",
                                        "value": {"stringValue": "TOOL"},
                                    },
                                    {"key": "tool.name", "value": {"stringValue": "lookup"}},
                                    {"key": "output.value", "value": {"stringValue": result}},
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }


def test_a_refused_span_through_serve_is_a_dead_letter_and_retry_stores_it(
    server: Server, pg_url: str
) -> None:
    refuse_events_containing(pg_url, "poison")
    _record(server, "before")
    _record(server, "bad", marker=" poison")
    _record(server, "after")
    questions = _questions(pg_url)
    assert len(questions) == 3  # the bad run is stored, without its refused tool result
    health = _health(server)
    assert health["database"] == "reachable"
    assert health["dead_letters"] == {"total": 1, "unresolved": 1}
    listed = json.loads(cli(pg_url, "dead-letters", "list", "--format", "json"))
    [letter] = listed["dead_letters"]
    assert letter["source"].startswith("otlp-http 127.0.0.1")
    assert "poison" in letter["raw"] and "events holding poison are refused" in letter["error"]
    accept_events_again(pg_url)
    retried = json.loads(cli(pg_url, "dead-letters", "retry", "--all", "--format", "json"))
    assert [r["outcome"] for r in retried] == ["stored"]
    with open_store(pg_url) as store:
        events = store.reader.events(letter["trace_id"])
    assert any("poison" in json.dumps(e.payload) for e in events)
    assert _health(server)["dead_letters"] == {"total": 1, "unresolved": 0}


def test_nul_through_the_in_process_tracer_then_normal_runs(pg_url: str, tmp_path: Path) -> None:
    exporter = StoreSpanExporter(pg_url, spool_dir=tmp_path / "spool")
    provider = TracerProvider()
    processor = CountingBatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    tracer = Tracer(provider)
    traces = []
    for i in range(21):
        nul = i == 0
        with tracer.run("faulty", attributes={"note": NUL_ATTRIBUTE if nul else "plain"}) as run:
            run.message("user", NUL_MESSAGE if nul else "hello")
            with run.tool_call("lookup", {"q": i}) as call:
                call.result(NUL_RESULT if nul else "row")
            run.respond("answer")
        traces.append(run.trace_id)
    assert processor.force_flush()
    provider.shutdown()
    assert exporter.stats.spooled == 0 and exporter.stats.refused == 0
    with open_store(pg_url) as store:
        assert {r["trace_id"] for r in store.reader.list_runs(limit=None)} == set(traces)
        assert store.reader.run(traces[0])["attributes"]["note"] == NUL_ATTRIBUTE  # type: ignore[index]
        assert store.dead_letters.counts()["total"] == 0
    record = _nul_record(pg_url, traces[0])  # type: ignore[arg-type]
    assert _payloads(record, "message")[0]["content"] == NUL_MESSAGE
    assert _payloads(record, "tool.returned")[0]["result"] == NUL_RESULT


def test_nul_through_import_traces_round_trips(
    pg_url: str, sqlite_url: str, tmp_path: Path
) -> None:
    """A file written by `export traces` elsewhere (here: SQLite), holding NUL in a tool result,
    a message and a run attribute, imports into PostgreSQL and exports back the same."""

    with open_store(sqlite_url) as source:
        source.append(awkward_run_events(random.Random(11), NUL_RESULT))
        source.append(run_events(random.Random(12)))
    exported = tmp_path / "runs.jsonl"
    cli(sqlite_url, "export", "traces", "-o", str(exported))
    assert "\\u0000" in exported.read_text()
    cli(pg_url, "import", "traces", str(exported))
    again = tmp_path / "again.jsonl"
    cli(pg_url, "export", "traces", "-o", str(again))

    def records(path: Path) -> list[Any]:
        return sorted((json.loads(line) for line in path.read_text().splitlines()), key=str)

    assert records(again) == records(exported)
    with open_store(pg_url) as store:
        assert store.dead_letters.counts()["total"] == 0


# --- a spool shared by two processes ----------------------------------------------------------

SPOOLING_PROCESS = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from agentdocket.tracer import StoreSpanExporter, Tracer

    # the database is away for this process: everything it records goes to the shared spool
    exporter = StoreSpanExporter(
        "postgresql+psycopg://nobody:x@127.0.0.1:9/none", spool_dir=sys.argv[1],
        retry_initial_s=3600,
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = Tracer(provider)
    for i in range(5):
        with tracer.run("process-a") as run:
            with run.tool_call("lookup", {"q": i}) as call:
                call.result("poison" if i == 2 else "fine")
    provider.shutdown()
    print(exporter.stats.spooled)
    """
)


def test_one_process_bad_record_never_holds_another_process_delivery(
    pg_url: str, tmp_path: Path
) -> None:
    spool = tmp_path / "shared-spool"
    done = subprocess.run(
        [sys.executable, "-c", SPOOLING_PROCESS, str(spool)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(done.stdout.split()[-1]) > 0
    assert list(spool.glob("*.spool")), "process A left its spooled records behind"
    refuse_events_containing(pg_url, "poison")
    exporter = StoreSpanExporter(pg_url, spool_dir=spool, replay_on_start=False)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = Tracer(provider)
    for i in range(3):
        with tracer.run("process-b") as run:
            run.respond(f"answer {i}")
    provider.shutdown()
    with open_store(pg_url) as store:
        runs = store.reader.list_runs(limit=None)
        assert sorted(r["agent"] for r in runs) == ["process-a"] * 5 + ["process-b"] * 3
        [letter] = store.dead_letters.letters()
    assert letter["source"].startswith("spool ") and "poison" in letter["raw"]
    assert not list(spool.glob("*.spool")), "the spool was not emptied"


# --- signals ----------------------------------------------------------------------------------


def test_serve_shuts_down_cleanly_on_sigterm(pg_url: str, tmp_path: Path) -> None:
    server = Server(pg_url, tmp_path / "spool").start()
    _record(server, "one")
    assert server.proc is not None
    server.proc.terminate()
    assert server.proc.wait(30) == 0, server.log.read_text()
    assert "stopped by SIGTERM" in server.log.read_text()
    spool = tmp_path / "spool"
    assert not spool.exists() or not list(spool.iterdir())
    assert len(_questions(pg_url)) == 1


def test_a_blank_token_is_refused(pg_url: str) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    result = CliRunner().invoke(
        main, ["--database", pg_url, "serve", "--host", "0.0.0.0", "--token", "   "]
    )
    assert result.exit_code == 1 and "blank" in result.output
