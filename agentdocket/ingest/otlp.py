"""OTLP trace requests (``ExportTraceServiceRequest``, protobuf or JSON) as spans the tracer's
mapping reads.

Decoding is strict about what the mapping relies on: trace and span ids of the right length and
not all zero, names that are strings, times that are integers. Anything else fails the whole
request with an :class:`OtlpDecodeError` naming the place (``resourceSpans[0].scopeSpans[1]
.spans[3].traceId``), so that nothing of a rejected request is stored. Attribute values are
taken as they come (arrays and key-value lists included); the resource's ``service.name`` is
passed on to each span that does not set it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from agentdocket.ingest import attributes as A
from agentdocket.ingest.evaluations import EVALUATION_EVENT
from agentdocket.ingest.evaluations import check as check_evaluation
from agentdocket.ingest.otlp_values import (
    OtlpDecodeError,
    hex_id,
    items,
    json_attributes,
    json_document,
    member,
    pb_attributes,
    uint,
)

SERVICE_NAME = "service.name"
_STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}
_STATUS_NAMES = {
    "STATUS_CODE_UNSET": 0,
    "STATUS_CODE_OK": 1,
    "STATUS_CODE_ERROR": 2,
}


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """A span event as received (only those the mapping reads are kept: ``exception`` and the
    GenAI conventions' older message events)."""

    name: str
    attributes: dict[str, Any]
    timestamp: int = 0  # nanoseconds since 1970


# The span events the mapping reads; others are not decoded.
KEPT_EVENTS = frozenset(
    {
        "exception",
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
        "gen_ai.client.inference.operation.details",
        EVALUATION_EVENT,
        A.GEN_AI_GUARDRAIL_EVENT,
        A.GEN_AI_DECISION_EVENT,
    }
)


@dataclass(slots=True)
class ReceivedSpan:
    """A span as received: what :func:`agentdocket.ingest.mapping.span_to_events` reads."""

    name: str
    context: SpanContext
    parent: SpanContext | None
    attributes: dict[str, Any]
    start_time: int
    end_time: int
    status: Status
    events: tuple[ReceivedEvent, ...] = ()
    kind: SpanKind = SpanKind.INTERNAL


def _context(trace_id: bytes, span_id: bytes) -> SpanContext:
    return SpanContext(
        trace_id=int.from_bytes(trace_id, "big"),
        span_id=int.from_bytes(span_id, "big"),
        is_remote=True,
    )


def _check_ids(trace_id: bytes, span_id: bytes, parent: bytes, where: str) -> None:
    if len(trace_id) != 16 or not any(trace_id):
        raise OtlpDecodeError(f"{where}.traceId: expected 16 bytes, not all zero")
    if len(span_id) != 8 or not any(span_id):
        raise OtlpDecodeError(f"{where}.spanId: expected 8 bytes, not all zero")
    if parent and (len(parent) != 8 or not any(parent)):
        raise OtlpDecodeError(f"{where}.parentSpanId: expected 8 bytes, not all zero, or empty")


def _span(
    *,
    name: Any,
    trace_id: bytes,
    span_id: bytes,
    parent: bytes,
    attributes: dict[str, Any],
    start: Any,
    end: Any,
    code: int,
    message: Any,
    service: Any,
    where: str,
    events: tuple[ReceivedEvent, ...] = (),
    kind: Any = 0,
) -> ReceivedSpan:
    _check_ids(trace_id, span_id, parent, where)
    if not isinstance(name, str):
        raise OtlpDecodeError(f"{where}.name: expected a string")
    for field, value in (("startTimeUnixNano", start), ("endTimeUnixNano", end)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**64:
            raise OtlpDecodeError(f"{where}.{field}: expected an unsigned 64-bit integer")
    if code not in _STATUS:
        raise OtlpDecodeError(f"{where}.status.code: {code!r} is not 0, 1 or 2")
    if message is not None and not isinstance(message, str):
        raise OtlpDecodeError(f"{where}.status.message: expected a string")
    if service is not None and SERVICE_NAME not in attributes:
        attributes[SERVICE_NAME] = service
    context = _context(trace_id, span_id)
    return ReceivedSpan(
        name=name,
        context=context,
        parent=_context(trace_id, parent) if parent else None,
        attributes=attributes,
        start_time=start,
        end_time=max(end, start),
        status=Status(_STATUS[code], message or None) if code == 2 else Status(_STATUS[code]),
        events=events,
        kind=_kind(kind, where),
    )


# OTLP's SpanKind numbers (0 unspecified) and names, as the SDK's enum (which has no
# "unspecified" and counts from 0)
_KIND_NAMES = {f"SPAN_KIND_{k.name}": k.value + 1 for k in SpanKind}


def _kind(kind: Any, where: str) -> SpanKind:
    if isinstance(kind, str):
        if kind not in _KIND_NAMES and kind != "SPAN_KIND_UNSPECIFIED":
            raise OtlpDecodeError(f"{where}.kind: unknown span kind {kind!r}")
        kind = _KIND_NAMES.get(kind, 0)
    if not isinstance(kind, int) or isinstance(kind, bool) or not 0 <= kind <= len(SpanKind):
        raise OtlpDecodeError(f"{where}.kind: expected 0 to {len(SpanKind)}")
    return SpanKind(kind - 1) if kind else SpanKind.INTERNAL


# --- protobuf -----------------------------------------------------------------------------------


def decode_protobuf(body: bytes) -> list[ReceivedSpan]:
    """The spans of a binary ``ExportTraceServiceRequest``."""
    request = _parse_protobuf(body)
    spans = []
    contexts: dict[bytes, SpanContext] = {}
    for ri, rs in enumerate(request.resource_spans):
        resource = pb_attributes(rs.resource.attributes, f"resourceSpans[{ri}].resource")
        service = resource.get(SERVICE_NAME)
        for si, ss in enumerate(rs.scope_spans):
            for pi, sp in enumerate(ss.spans):
                span = _pb_span(sp, service, contexts)
                if span is None:  # something to refuse: read it again to name the place
                    where = f"resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}]"
                    span = _pb_span_checked(sp, service, where)
                spans.append(span)
    return spans


def _parse_protobuf(body: bytes) -> Any:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OtlpDecodeError(f"body: not an ExportTraceServiceRequest ({exc})") from None
    return request


# Shared by every span that has them (a Status is immutable)
_UNSET_STATUS, _OK_STATUS = Status(StatusCode.UNSET), Status(StatusCode.OK)
# SpanKind by OTLP's number (0: unspecified, read as internal)
_PB_KINDS = (SpanKind.INTERNAL, *SpanKind)
_ZERO_TRACE, _ZERO_SPAN = bytes(16), bytes(8)


def _pb_span(sp: Any, service: Any, contexts: dict[bytes, SpanContext]) -> ReceivedSpan | None:
    """A protobuf span as :func:`_pb_span_checked` reads it, checked without naming places;
    None when it has anything to refuse (protobuf gives names, times and the status message
    their types already). Span contexts are made once per span id of the request: a parent's
    is its span's own."""
    trace_id, span_id, parent = sp.trace_id, sp.span_id, sp.parent_span_id
    status, kind = sp.status, sp.kind
    code = status.code
    if (
        len(trace_id) != 16
        or trace_id == _ZERO_TRACE
        or len(span_id) != 8
        or span_id == _ZERO_SPAN
        or (parent and (len(parent) != 8 or parent == _ZERO_SPAN))
        or code not in _STATUS
        or not 0 <= kind < len(_PB_KINDS)
    ):
        return None
    attributes = pb_attributes(sp.attributes)
    if service is not None and SERVICE_NAME not in attributes:
        attributes[SERVICE_NAME] = service
    events: tuple[ReceivedEvent, ...] = ()
    if sp.events:
        kept = _pb_events(sp.events)
        if kept is None:
            return None
        events = kept
    start, end = sp.start_time_unix_nano, sp.end_time_unix_nano
    return ReceivedSpan(
        sp.name,
        _shared_context(contexts, trace_id, span_id),
        _shared_context(contexts, trace_id, parent) if parent else None,
        attributes,
        start,
        end if end > start else start,
        _OK_STATUS if code == 1 else _UNSET_STATUS if code == 0 else _error(status.message),
        events,
        _PB_KINDS[kind],
    )


def _shared_context(
    contexts: dict[bytes, SpanContext], trace_id: bytes, span_id: bytes
) -> SpanContext:
    key = trace_id + span_id
    found = contexts.get(key)
    if found is None:
        found = contexts[key] = _context(trace_id, span_id)
    return found


def _error(message: str) -> Status:
    return Status(StatusCode.ERROR, message or None)


def _pb_events(events: Any) -> tuple[ReceivedEvent, ...] | None:
    """The kept events of a protobuf span; None when an evaluation among them is refused."""
    out = []
    for ev in events:
        name = ev.name
        if name in KEPT_EVENTS:
            attributes = pb_attributes(ev.attributes)
            if name == EVALUATION_EVENT and check_evaluation(attributes):
                return None
            out.append(ReceivedEvent(name, attributes, ev.time_unix_nano))
    return tuple(out)


def _pb_span_checked(sp: Any, service: Any, where: str) -> ReceivedSpan:
    """A protobuf span, every check naming its place (``where``) when it fails."""
    return _span(
        name=sp.name,
        trace_id=sp.trace_id,
        span_id=sp.span_id,
        parent=sp.parent_span_id,
        attributes=pb_attributes(sp.attributes, where),
        start=sp.start_time_unix_nano,
        end=sp.end_time_unix_nano,
        code=sp.status.code,
        message=sp.status.message,
        service=service,
        where=where,
        kind=sp.kind,
        events=tuple(
            _event(
                ev.name,
                pb_attributes(ev.attributes, f"{where}.events[{k}]"),
                ev.time_unix_nano,
                f"{where}.events[{k}]",
            )
            for k, ev in enumerate(sp.events)
            if ev.name in KEPT_EVENTS
        ),
    )


# --- JSON ---------------------------------------------------------------------------------------


def decode_json(body: bytes) -> list[ReceivedSpan]:
    """The spans of an OTLP/JSON ``ExportTraceServiceRequest`` (ids as hex; 64-bit integers as
    numbers or decimal strings; lowerCamelCase member names, or the protobuf field names)."""
    doc = json_document(body)
    spans = []
    for ri, rs in items(doc, "resourceSpans", "resource_spans", "body"):
        rwhere = f"resourceSpans[{ri}]"
        resource = member(rs, "resource", "resource", rwhere, dict) or {}
        attrs = json_attributes(resource, f"{rwhere}.resource")
        service = attrs.get(SERVICE_NAME)
        for si, ss in items(rs, "scopeSpans", "scope_spans", rwhere):
            swhere = f"{rwhere}.scopeSpans[{si}]"
            for pi, sp in items(ss, "spans", "spans", swhere):
                where = f"{swhere}.spans[{pi}]"
                status = member(sp, "status", "status", where, dict) or {}
                spans.append(
                    _span(
                        name=member(sp, "name", "name", where, str) or "",
                        trace_id=hex_id(sp, "traceId", "trace_id", 16, where),
                        span_id=hex_id(sp, "spanId", "span_id", 8, where),
                        parent=hex_id(sp, "parentSpanId", "parent_span_id", 8, where, True),
                        attributes=json_attributes(sp, where),
                        start=uint(sp, "startTimeUnixNano", "start_time_unix_nano", where),
                        end=uint(sp, "endTimeUnixNano", "end_time_unix_nano", where),
                        code=_status_code(status, f"{where}.status"),
                        message=member(status, "message", "message", f"{where}.status", str),
                        service=service,
                        where=where,
                        events=_json_events(sp, where),
                        kind=sp.get("kind", 0),
                    )
                )
    return spans


def _json_events(span: Mapping[str, Any], where: str) -> tuple[ReceivedEvent, ...]:
    out = []
    for k, ev in items(span, "events", "events", where):
        place = f"{where}.events[{k}]"
        name = member(ev, "name", "name", place, str) or ""
        if name in KEPT_EVENTS:
            time = uint(ev, "timeUnixNano", "time_unix_nano", place)
            out.append(_event(name, json_attributes(ev, place), time, place))
    return tuple(out)


def _event(name: str, attributes: dict[str, Any], time: int, where: str) -> ReceivedEvent:
    if name == EVALUATION_EVENT and (problem := check_evaluation(attributes)):
        raise OtlpDecodeError(f"{where}: {problem}")
    return ReceivedEvent(name, attributes, time)


def _status_code(status: Mapping[str, Any], where: str) -> int:
    code = status.get("code", 0)
    if isinstance(code, str):
        if code not in _STATUS_NAMES:
            raise OtlpDecodeError(f"{where}.code: unknown status {code!r}")
        return _STATUS_NAMES[code]
    if not isinstance(code, int) or isinstance(code, bool):
        raise OtlpDecodeError(f"{where}.code: expected an integer")
    return code
