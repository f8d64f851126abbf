"""A binary trace request with something to refuse fails whole, naming the place: the
protobuf decoder's quick path gives way to the checked one for every span it would refuse."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.trace import SpanKind, StatusCode

from agentdocket.ingest.otlp import decode_protobuf
from agentdocket.ingest.otlp_values import OtlpDecodeError

TRACE, SPAN, PARENT = bytes(range(1, 17)), bytes(range(1, 9)), bytes(range(2, 10))
PLACE = "resourceSpans[0].scopeSpans[1].spans[1]"


def _request(**second: Any) -> bytes:
    """Two scopes; the second's second span gets ``second``'s fields."""
    request = ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    kv = rs.resource.attributes.add()
    kv.key, kv.value.string_value = "service.name", "svc"
    rs.scope_spans.add().spans.add(name="a", trace_id=TRACE, span_id=PARENT)
    scope = rs.scope_spans.add()
    scope.spans.add(name="b", trace_id=TRACE, span_id=bytes(range(3, 11)), parent_span_id=PARENT)
    fields = {"name": "c", "trace_id": TRACE, "span_id": SPAN, "parent_span_id": PARENT}
    events = second.pop("events", [])
    code = second.pop("code", 0)
    span = scope.spans.add(**{**fields, **second})
    span.status.code = code
    span.status.message = "boom"
    for name, attributes in events:
        ev = span.events.add(name=name, time_unix_nano=5)
        for key, value in attributes.items():
            kv = ev.attributes.add()
            kv.key = key
            if isinstance(value, str):
                kv.value.string_value = value
            else:
                kv.value.double_value = value
    return bytes(request.SerializeToString())


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"trace_id": bytes(16)}, "traceId: expected 16 bytes, not all zero"),
        ({"trace_id": b"\x01" * 15}, "traceId: expected 16 bytes, not all zero"),
        ({"span_id": bytes(8)}, "spanId: expected 8 bytes, not all zero"),
        ({"span_id": b"\x01" * 9}, "spanId: expected 8 bytes, not all zero"),
        ({"parent_span_id": bytes(8)}, "parentSpanId: expected 8 bytes, not all zero, or empty"),
        ({"parent_span_id": b"\x01"}, "parentSpanId: expected 8 bytes, not all zero, or empty"),
        ({"code": 3}, "status.code: 3 is not 0, 1 or 2"),
        ({"kind": 6}, "kind: expected 0 to 5"),
        (
            {"events": [("exception", {}), ("gen_ai.evaluation.result", {"x": "y"})]},
            "events[1]: gen_ai.evaluation.result needs gen_ai.evaluation.name",
        ),
    ],
)
def test_a_refused_span_is_named(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(OtlpDecodeError) as caught:
        decode_protobuf(_request(**fields))
    assert str(caught.value).startswith(f"{PLACE}.{message}")


def test_an_accepted_request_reads_whole() -> None:
    evaluation = {"gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.5}
    spans = decode_protobuf(
        _request(
            code=2,
            kind=3,
            start_time_unix_nano=9,
            end_time_unix_nano=4,
            events=[("other", {}), ("gen_ai.evaluation.result", evaluation)],
        )
    )
    a, b, c = spans
    assert [s.name for s in spans] == ["a", "b", "c"]
    assert a.parent is None and b.parent == a.context == c.parent
    assert c.context.span_id == int.from_bytes(SPAN, "big") and c.context.is_remote
    assert (c.start_time, c.end_time) == (9, 9)
    assert (c.status.status_code, c.status.description) == (StatusCode.ERROR, "boom")
    assert (a.status.status_code, a.status.description) == (StatusCode.UNSET, None)
    assert (a.kind, c.kind) == (SpanKind.INTERNAL, SpanKind.CLIENT)
    assert [(e.name, e.attributes, e.timestamp) for e in c.events] == [
        ("gen_ai.evaluation.result", evaluation, 5)
    ]
    assert all(s.attributes == {"service.name": "svc"} for s in (a, b))
