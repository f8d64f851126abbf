"""Digests of the events the receiver and the exporter make of real spans, for
``tests/unit/test_mapping_unchanged.py``: each source's events, in order, in their JSON form
(:func:`agentdocket.events.model.event_to_json`, keys sorted), hashed with sha256 (its first
128 bits kept).

Sources:

- every request captured from a real framework (``tests/fixtures/otlp/``, traces and logs), read
  as OTLP/JSON and, converted to binary, as OTLP/protobuf;
- ``bench/receiver.py``'s ``make_spans(2000)`` (OpenInference agent traces) with their ids and
  times made deterministic, encoded by the stock OTLP encoder and read as protobuf, and mapped
  directly as the SDK's spans (what the exporter does);
- runs recorded with agentdocket's own tracer (every kind of step), the same two ways.

Print the current digests (to record them again after a deliberate change of the mapping)::

    python -m tests.helpers.mapping_digests
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event as SdkEvent
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext

from agentdocket.events import Event
from agentdocket.events.model import event_to_json
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.readers import READERS

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "otlp"
BASE_TIME = 1_767_225_600_000_000_000  # 2026-01-01, nanoseconds
_IDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def digest(events: Iterable[Event]) -> str:
    h = hashlib.sha256()
    for event in events:
        line = json.dumps(event_to_json(event), sort_keys=True, ensure_ascii=False)
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]  # 128 bits: short enough for a line


# --- the captures -------------------------------------------------------------------------------


def _ids_as_base64(value: Any) -> Any:
    """OTLP/JSON's hex ids as protobuf JSON's base64, for :mod:`google.protobuf.json_format`."""
    if isinstance(value, list):
        return [_ids_as_base64(v) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: base64.b64encode(bytes.fromhex(v)).decode()
        if k in _IDS and isinstance(v, str)
        else _ids_as_base64(v)
        for k, v in value.items()
    }


def as_protobuf(body: bytes, signal: str) -> bytes:
    request = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    json_format.ParseDict(_ids_as_base64(json.loads(body)), request)
    return bytes(request.SerializeToString())


def captured() -> dict[str, list[Event]]:
    out = {}
    for path in sorted(CAPTURES.glob("*/[0-9][0-9][0-9]-*.json")):
        signal = path.stem.split("-", 1)[1]
        body = path.read_bytes()
        name = f"{path.parent.name}/{path.name}"
        out[f"{name} json"] = READERS[signal][False](body)[1]
        out[f"{name} protobuf"] = READERS[signal][True](as_protobuf(body, signal))[1]
    return out


# --- spans made here ----------------------------------------------------------------------------


def deterministic(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The spans with ids numbered in order of appearance and times from a fixed clock (a span
    starts 1 ms after the one before it and lasts 0.5 ms; its events at its start)."""
    traces: dict[int, int] = {}
    span_ids: dict[int, int] = {}

    def ctx(c: SpanContext | None) -> SpanContext | None:
        if c is None:
            return None
        t = traces.setdefault(c.trace_id, 0xA0000000 + len(traces))
        s = span_ids.setdefault(c.span_id, 0xB000 + len(span_ids))
        return SpanContext(trace_id=t, span_id=s, is_remote=False, trace_flags=c.trace_flags)

    out = []
    for i, span in enumerate(spans):
        start = BASE_TIME + i * 1_000_000
        events = [SdkEvent(e.name, e.attributes, timestamp=start) for e in span.events]
        out.append(
            ReadableSpan(
                name=span.name,
                context=ctx(span.context),
                parent=ctx(span.parent),
                resource=span.resource,
                attributes=span.attributes,
                events=events,
                kind=span.kind,
                status=span.status,
                start_time=start,
                end_time=start + 500_000,
                instrumentation_scope=span.instrumentation_scope,
            )
        )
    return out


def _two_ways(name: str, spans: Sequence[ReadableSpan]) -> dict[str, list[Event]]:
    body = encode_spans(spans).SerializeToString()
    return {
        f"{name} protobuf": READERS["traces"][True](body)[1],
        f"{name} sdk": spans_to_events(spans, keep_unrecognized=True),
        f"{name} sdk recognised only": spans_to_events(spans),
    }


def bench_spans(n: int = 2000) -> dict[str, list[Event]]:
    from bench.receiver import make_spans

    return _two_ways(f"bench make_spans({n})", deterministic(make_spans(n)))


def our_spans() -> dict[str, list[Event]]:
    from agentdocket.tracer import Tracer

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ours"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = Tracer(provider)
    for r in range(3):
        with tracer.run(
            "sql-agent",
            question=f"How many singers? ({r})",
            strategy="plan-first",
            dataset="spider",
            dataset_version="1",
            case="case-7",
            models={"planner": "gpt-4o"},
            attributes={"round": r},
        ) as run:
            run.message("user", "How many singers?", name="examiner")
            run.plan(["sql", {"tool": "format", "text": "answer"}], text="look it up")
            run.llm_call(
                "gpt-4o",
                "planner",
                [{"role": "user", "content": "How many singers?"}],
                output={"role": "assistant", "content": "SELECT count(*) FROM singer"},
                temperature=0.2,
                input_tokens=30,
                output_tokens=8,
            )
            with run.sql("SELECT count(*) FROM singer", database="concert") as q:
                q.result(["count"], [[6 + r]])
            with run.tool_call("format", {"n": 6 + r}) as call:
                call.result({"text": f"{6 + r} singers"})
            run.retrieval("singers", [{"id": "d1", "score": 0.5, "text": "six singers"}])
            run.respond(f"There are {6 + r} singers.")
            if r == 2:
                run.fail("the examiner left")
    provider.shutdown()
    return _two_ways("our tracer", deterministic(memory.get_finished_spans()))


def sources() -> dict[str, list[Event]]:
    """Each source's events."""
    return {**captured(), **bench_spans(), **our_spans()}


def all_digests(events: dict[str, list[Event]] | None = None) -> dict[str, str]:
    return {name: digest(found) for name, found in (events or sources()).items()}


if __name__ == "__main__":
    for key, value in all_digests().items():
        print(f"    {key!r}: {value!r},")
