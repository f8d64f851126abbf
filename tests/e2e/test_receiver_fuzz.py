"""Fuzzing the receiver (hypothesis): malformed protobuf and JSON, random and mutated from
valid requests. Never a 5xx, never a crash, and nothing stored from a rejected request."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.testclient import TestClient

from agentdocket.ingest.sink import Sink
from agentdocket.runtime.otlp_http import Receiver
from agentdocket.store import open_store
from tests.helpers.otlp_server import START_NS

PROTOBUF = {"content-type": "application/x-protobuf"}
JSON = {"content-type": "application/json"}
FUZZ = settings(
    max_examples=int(os.environ.get("AGENTDOCKET_FUZZ_EXAMPLES", "150")),  # more: a deeper run
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Harness:
    def __init__(self, tmp: Path) -> None:
        self.url = f"sqlite:///{tmp / 'fuzz.db'}"
        self.sink = Sink(self.url, spool_dir=tmp / "spool")
        self.client = TestClient(Receiver(self.sink, max_body=64 * 1024).app)
        self.store = open_store(self.url)

    def events(self) -> int:
        return int(self.store.reader.counts()["events"])

    def post(self, body: bytes, headers: dict[str, str]) -> int:
        before = self.events()
        response = self.client.post("/v1/traces", content=body, headers=headers)
        assert response.status_code < 500, response.text
        if response.status_code != 200:
            assert response.status_code in (400, 413), response.text
            assert self.events() == before, "a rejected request stored something"
        return response.status_code


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    h = Harness(tmp_path_factory.mktemp("fuzz"))
    yield h
    h.store.close()
    h.sink.close()


def _valid_protobuf() -> bytes:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("fuzz")
    with tracer.start_as_current_span(
        "agent", attributes={"openinference.span.kind": "AGENT", "input.value": "q"}
    ):
        with tracer.start_as_current_span(
            "tool",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "t",
                "input.value": '{"a": 1}',
                "tags": ["x", "y"],
            },
        ):
            pass
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "t",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": "{",
                "llm.token_count.prompt": 3.5,
            },
        ):
            pass
    body: bytes = encode_spans(memory.get_finished_spans()).SerializeToString()
    provider.shutdown()
    return body


VALID_PB = _valid_protobuf()


def _valid_json() -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "x",
                                "startTimeUnixNano": str(START_NS),
                                "endTimeUnixNano": str(START_NS + 1),
                                "attributes": [
                                    {
                                        "key": "gen_ai.operation.name",
                                        "value": {"stringValue": "chat"},
                                    },
                                    {
                                        "key": "k",
                                        "value": {"arrayValue": {"values": [{"intValue": 1}]}},
                                    },
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes_as_protobuf(harness: Harness, body: bytes) -> None:
    harness.post(body, PROTOBUF)


@FUZZ
@given(st.data())
def test_mutated_protobuf(harness: Harness, data: st.DataObject) -> None:
    body = bytearray(VALID_PB)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(body) - 1))
        body[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    harness.post(bytes(body[:cut] if data.draw(st.booleans()) else body), PROTOBUF)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=30,
)


@FUZZ
@given(JSON_VALUES)
def test_random_json(harness: Harness, value: Any) -> None:
    harness.post(json.dumps(value).encode(), JSON)  # any integer


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@FUZZ
@given(st.data())
def test_mutated_json(harness: Harness, data: st.DataObject) -> None:
    """A valid request with one member somewhere replaced by any JSON value."""
    doc = _valid_json()
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent: Any = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(JSON_VALUES)
    harness.post(json.dumps(doc).encode(), JSON)


@FUZZ
@given(st.binary(max_size=512))
def test_random_gzip_bodies(harness: Harness, body: bytes) -> None:
    harness.post(body, {**JSON, "content-encoding": "gzip"})
    harness.post(gzip.compress(body), {**PROTOBUF, "content-encoding": "gzip"})


def test_the_valid_seeds_are_accepted(tmp_path: Path) -> None:
    """The mutations start from requests the receiver takes."""
    fresh = Harness(tmp_path)
    try:
        assert fresh.post(VALID_PB, PROTOBUF) == 200
        assert fresh.events() == 6  # run started + finished, tool called + returned, llm, plan
        assert fresh.post(orjson.dumps(_valid_json()), JSON) == 200
        assert fresh.events() == 7
    finally:
        fresh.store.close()
        fresh.sink.close()
