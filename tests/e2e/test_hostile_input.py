"""Hostile input through the receiver: values built to hurt (nesting far past the recursion
limit, arrays and objects of tens of thousands of items, strings of megabytes, thousands of
attributes, text no database holds as is) on a tool span or on a run's root. Every event the
receiver acknowledges is stored or kept as a dead letter, the run exists, the healthy traffic
beside it is stored directly (never spooled), and the database is never reported away."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from agentdocket.ingest.sink import Sink
from agentdocket.runtime.otlp_http import Receiver
from agentdocket.store import open_store
from agentdocket.store.backends import backend_of
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.limits import Limits
from tests.helpers.otlp_server import START_NS, Server

JSON = {"content-type": "application/json"}
# Live ingestion's limits with smaller strings and arrays, so that a request far past them
# still fits the receiver's 16 MiB body (serve's own defaults are 8 Mi characters, 100,000).
STRING, ITEMS = 1 << 20, 10_000
LIMITS = Limits(max_string=STRING, max_items=ITEMS)


@pytest.fixture
def receiver(url: str, tmp_path: Path) -> Iterator[Receiver]:
    sink = Sink(url, spool_dir=tmp_path / "spool", source="receiver", limits=LIMITS)
    yield Receiver(sink)
    sink.close()


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, dict):  # an OTLP key-value list (its own nesting)
        return {"key": key, "value": value}
    return {"key": key, "value": {"stringValue": value}}


def _span(trace: str, span: str, parent: str | None, name: str, attrs: dict[str, Any]) -> Any:
    out = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "startTimeUnixNano": str(START_NS),
        "endTimeUnixNano": str(START_NS + 500_000_000),
        "attributes": [_attribute(k, v) for k, v in attrs.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def _run(trace: str, *, root: dict[str, Any], tool: dict[str, Any]) -> bytes:
    """A run's root agent span and one tool span below it, as an OTLP/JSON request."""
    spans = [
        _span(
            trace,
            "a000000000000001",
            None,
            "agent",
            {"openinference.span.kind": "AGENT", "input.value": "q?", "output.value": "a"} | root,
        ),
        _span(
            trace,
            "a000000000000002",
            "a000000000000001",
            "lookup",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": '{"q": 1}',
                "output.value": "r",
            }
            | tool,
        ),
    ]
    # the standard encoder: a deep key-value list is past orjson's own nesting limit
    return json.dumps(
        {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, ensure_ascii=False
    ).encode()


def _nested(depth: int, shape: str) -> str:
    if shape == "array":
        return "[" * depth + "]" * depth
    if shape == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return '[{"a":' * (depth // 2) + "1" + "}]" * (depth // 2)


def _kvlist(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "leaf"}
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


# What a hostile client sends, as (where, attributes): each far past one limit.
hostile = st.one_of(
    st.builds(
        lambda d, s: {"input.value": _nested(d, s)},
        st.integers(LIMITS.max_depth + 1, 3_000),
        st.sampled_from(["array", "object", "mixed"]),
    ),
    st.builds(lambda d: {"deep.kvlist": _kvlist(d)}, st.integers(LIMITS.max_depth + 1, 200)),
    st.builds(
        lambda n, obj: {
            "input.value": orjson.dumps(
                {str(i): i for i in range(n)} if obj else list(range(n))
            ).decode()
        },
        st.integers(ITEMS + 1, 25_000),
        st.booleans(),
    ),
    st.builds(
        lambda n, ch: {"output.value": ch * n},
        st.integers(STRING + 1, 2 * STRING),  # under 16 MiB as JSON
        st.sampled_from(["x", "é", "\x00", "\ufdd0", "😀"]),
    ),
    st.builds(
        lambda n: {f"attr.{i}": str(i) for i in range(n)},
        st.integers(LIMITS.max_attributes + 1, 6_000),
    ),
    st.builds(lambda t: {"input.value": t, "output.value": t}, st.text(max_size=200)),
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(values=hostile, on_root=st.booleans())
def test_every_acknowledged_event_is_stored_or_dead_lettered_and_nothing_is_spooled(
    receiver: Receiver, url: str, values: dict[str, Any], on_root: bool
) -> None:
    client = TestClient(receiver.app)
    poisoned, healthy = uuid.uuid4().hex, uuid.uuid4().hex
    before = receiver.stats.events
    body = _run(poisoned, root=values, tool={}) if on_root else _run(poisoned, root={}, tool=values)
    assert client.post("/v1/traces", content=body, headers=JSON).status_code == 200
    sent = receiver.stats.events - before
    assert client.post("/v1/traces", content=_run(healthy, root={}, tool={}), headers=JSON)
    assert client.get("/healthz").json()["database"] == "reachable"
    assert receiver.sink.stats.spooled == 0 and receiver.sink.stats.failures == 0

    store = open_store(url)
    try:
        letters = [d for d in store.dead_letters.letters() if d["trace_id"] == poisoned]
        assert len(store.reader.events(poisoned)) + len(letters) == sent
        run = store.reader.run(poisoned)
        assert run is not None and run["agent"] == "agent"
        assert store.reader.run(healthy) is not None and len(store.reader.events(healthy)) == 5
    finally:
        store.close()


# What names a span's kind in each convention, given values of every other OTLP type.
CONVENTION_KEYS = [
    "gen_ai.operation.name",
    "openinference.span.kind",
    "traceloop.span.kind",
    "a2a.method.name",
    "tool.name",
    "gen_ai.tool.name",
]
WRONG_TYPES = [
    {"arrayValue": {"values": [{"stringValue": "chat"}]}},
    {"intValue": "7"},
    {"boolValue": True},
    {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}},
]


def test_a_convention_attribute_of_the_wrong_type_costs_one_step_not_the_request(
    receiver: Receiver, url: str
) -> None:
    """A span whose kind-naming attribute is a list, a number, a boolean or a map (any client
    may send one) is a step with its problem noted; the request is taken, never a 500."""
    client = TestClient(receiver.app, raise_server_exceptions=False)
    for key in CONVENTION_KEYS:
        for value in WRONG_TYPES:
            trace = uuid.uuid4().hex
            reply = client.post(
                "/v1/traces", content=_run(trace, root={}, tool={key: value}), headers=JSON
            )
            assert reply.status_code == 200, (key, value, reply.text)
            with open_store(url) as store:
                run = store.reader.run(trace)
                assert run is not None and run["agent"] == "agent", (key, value)
                assert len(store.reader.events(trace)) >= 3, (key, value)
    assert receiver.sink.stats.spooled == 0 and receiver.sink.stats.failures == 0


# --- the chaos run's case, through `agentdocket serve` and the stock exporter ----------------


def _metric(server: Server, name: str) -> float:
    reply = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=10)
    return sum(
        sample.value
        for family in text_string_to_metric_families(reply.text)
        for sample in family.samples
        if sample.name == name
    )


class _Watch(threading.Thread):
    """``/healthz`` asked over and over until stopped: every answer's ``database``."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{server.port}/healthz"
        self.seen: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.seen.append(httpx.get(self.url, timeout=30).json()["database"])


def test_a_value_nested_a_thousand_deep_is_no_outage(pg_url: str, tmp_path: Path) -> None:
    server = Server(pg_url, tmp_path / "spool").start()
    watch = _Watch(server)
    watch.start()
    deep = '{"a":' * 1_000 + "1" + "}" * 1_000
    provider = TracerProvider(resource=Resource.create({"service.name": "hostile"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
    tracer = provider.get_tracer("test")
    try:
        for i in range(202):
            poison_root, poison_tool = i == 67, i == 134
            root = {"openinference.span.kind": "AGENT", "output.value": "done"}
            root["input.value"] = deep if poison_root else f"question {i}"
            tool = {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "input.value": deep if poison_tool else '{"q": 1}',
                "output.value": "r",
            }
            with (
                tracer.start_as_current_span(f"agent {i}", attributes=root),
                tracer.start_as_current_span("lookup", attributes=tool),
            ):
                pass
        provider.shutdown()
        watch.done.set()
        watch.join()
        assert watch.seen and set(watch.seen) == {"reachable"}
        assert _metric(server, "agentdocket_events_spooled_total") == 0
        assert _metric(server, "agentdocket_database_failures_total") == 0
        assert _metric(server, "agentdocket_events_stored_total") == 202 * 5
    finally:
        watch.done.set()
        server.stop()
    with open_store(pg_url) as store:
        runs = {r["agent"]: r for r in store.reader.list_runs(limit=None)}
        assert len(runs) == 202
        assert runs["agent 67"]["question"] == LIMITS.depth_marker()
        [call] = [
            e for e in store.reader.events(runs["agent 134"]["trace_id"]) if e.kind == "tool.called"
        ]
        assert LIMITS.depth_marker() in json.dumps(call.payload)
        assert store.dead_letters.counts()["total"] == 0


# --- time bounds ------------------------------------------------------------------------------


def _partitions(url: str) -> set[str]:
    """The log's partitions (PostgreSQL; none on SQLite)."""
    if not backend_of(url).partitions:
        return set()
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        ).fetchall()
    return {r[0] for r in rows}


def _dated(trace: str, start_ns: int) -> bytes:
    span = _span(trace, "b000000000000001", None, "agent", {"openinference.span.kind": "AGENT"})
    span["startTimeUnixNano"] = str(start_ns)
    span["endTimeUnixNano"] = str(start_ns)
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def test_spans_dated_1970_or_2554_are_dead_letters_and_make_no_partition(
    receiver: Receiver, url: str
) -> None:
    client = TestClient(receiver.app)
    before = _partitions(url)
    traces = {"1970": uuid.uuid4().hex, "2554": uuid.uuid4().hex, "now": uuid.uuid4().hex}
    for label, when in (("1970", 0), ("2554", 2**64 - 1), ("now", START_NS)):
        reply = client.post("/v1/traces", content=_dated(traces[label], when), headers=JSON)
        assert reply.status_code == 200
    assert _partitions(url) == before
    assert not {p for p in _partitions(url) if p.endswith(("1970_01", "2554_07"))}
    with open_store(url) as store:
        assert store.reader.run(traces["now"]) is not None
        letters = {d["trace_id"]: d["error"] for d in store.dead_letters.letters()}
        assert (
            store.reader.events(traces["1970"]) == [] and store.reader.events(traces["2554"]) == []
        )
    assert (
        "dated 1970-01-01T00:00:00Z, older than 400 days (limit max_age)" in letters[traces["1970"]]
    )
    assert (
        "dated 2554-07-21T23:34:33Z, more than 1 day ahead (limit max_ahead)"
        in letters[traces["2554"]]
    )
    assert receiver.sink.stats.spooled == 0
