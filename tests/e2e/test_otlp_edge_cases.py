"""The receiver's documented rules for spans no convention expects
(:mod:`agentdocket.ingest.span_rules`), through the HTTP endpoint on both databases: a span
ending before it starts, a span id used twice in one request, a parent cycle, an empty
request."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from agentdocket.ingest.sink import Sink
from agentdocket.runtime.otlp_http import Receiver
from agentdocket.store import open_store
from tests.helpers.otlp_server import START_NS

JSON = {"content-type": "application/json"}


@pytest.fixture
def client(url: str, tmp_path: Path) -> Iterator[TestClient]:
    sink = Sink(url, spool_dir=tmp_path / "spool", source="receiver")
    yield TestClient(Receiver(sink).app)
    sink.close()


def _span(
    trace: str, span: str, parent: str | None, kind: str, name: str, start_ms: int = 0, **more: Any
) -> dict[str, Any]:
    attrs = {"openinference.span.kind": kind, "input.value": f"{name} in", **more}
    if kind == "TOOL":
        attrs["tool.name"] = name
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": str(START_NS + start_ms * 1_000_000),
        "endTimeUnixNano": str(START_NS + (start_ms + 5) * 1_000_000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def _post(client: TestClient, *spans: dict[str, Any]) -> None:
    body = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]})
    reply = client.post("/v1/traces", content=body, headers=JSON)
    assert reply.status_code == 200, reply.text


def _events(url: str, trace: str) -> list[Any]:
    with open_store(url) as store:
        return store.reader.events(trace)


ROOT, TOOL = "a000000000000001", "a000000000000002"


def test_a_span_ending_before_it_starts_ends_when_it_starts(client: TestClient, url: str) -> None:
    trace = uuid.uuid4().hex
    tool = _span(trace, TOOL, ROOT, "TOOL", "lookup", start_ms=10)
    tool["endTimeUnixNano"] = str(START_NS)  # 10 ms before it starts
    _post(client, _span(trace, ROOT, None, "AGENT", "agent"), tool)
    [called] = [e for e in _events(url, trace) if e.kind == "tool.called"]
    [returned] = [e for e in _events(url, trace) if e.kind == "tool.returned"]
    assert returned.ts == called.ts
    assert returned.payload["duration_ms"] == 0


def test_a_span_id_used_twice_keeps_both_and_a_retry_adds_nothing(
    client: TestClient, url: str
) -> None:
    trace = uuid.uuid4().hex
    request = (
        _span(trace, ROOT, None, "AGENT", "agent"),
        _span(trace, TOOL, ROOT, "TOOL", "lookup"),
        _span(trace, TOOL, ROOT, "TOOL", "lookup"),  # the same span again: one span
        _span(trace, TOOL, ROOT, "TOOL", "search", start_ms=7),  # another span, same id
        _span(trace, TOOL, ROOT, "UNKNOWN", "cache", start_ms=8),  # and another, a step
    )
    _post(client, *request)
    events = _events(url, trace)
    calls = {e.payload["tool"]: e.span_id for e in events if e.kind == "tool.called"}
    assert calls["lookup"] == TOOL and calls["search"] not in (TOOL, ROOT)
    [step] = [e for e in events if e.kind == "step"]
    assert step.payload["attributes"]["agentdocket.duplicate_of"] == TOOL
    assert step.span_id not in (TOOL, calls["search"])
    _post(client, *request)
    assert len(_events(url, trace)) == len(events)


def test_a_parent_cycle_is_broken_at_its_earliest_span(client: TestClient, url: str) -> None:
    trace = uuid.uuid4().hex
    # the agent's parent is its own tool, the tool's parent the agent: no root at all
    _post(
        client,
        _span(trace, TOOL, ROOT, "TOOL", "lookup", start_ms=3),
        _span(trace, ROOT, TOOL, "AGENT", "agent"),
    )
    with open_store(url) as store:
        run = store.reader.run(trace)
        events = store.reader.events(trace)
    assert run is not None and run["agent"] == "agent" and run["question"] == "agent in"
    [started] = [e for e in events if e.kind == "run.started"]
    assert started.parent_span_id is None and started.span_id == ROOT
    [called] = [e for e in events if e.kind == "tool.called"]
    assert called.parent_span_id == ROOT
    # a span its own parent is a root as well
    alone = uuid.uuid4().hex
    _post(client, _span(alone, ROOT, ROOT, "AGENT", "solo"))
    with open_store(url) as store:
        solo = store.reader.run(alone)
    assert solo is not None and solo["agent"] == "solo"


def test_an_empty_request_is_accepted_and_stores_nothing(client: TestClient, url: str) -> None:
    with open_store(url) as store:
        before = store.reader.counts()["events"]
    protobuf = {"content-type": "application/x-protobuf"}
    assert client.post("/v1/traces", content=b"", headers=protobuf).status_code == 200
    for body in (b"{}", b'{"resourceSpans": []}', b'{"resourceSpans": [{"scopeSpans": []}]}'):
        assert client.post("/v1/traces", content=body, headers=JSON).status_code == 200
    reply = client.post("/v1/traces", content=b"", headers=JSON)
    assert reply.status_code == 400 and "body: not JSON" in reply.json()["message"]
    with open_store(url) as store:
        assert store.reader.counts()["events"] == before
