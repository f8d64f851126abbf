"""OTLP log requests (``ExportLogsServiceRequest``, protobuf or JSON) as log records the
mapping reads (:mod:`agentdocket.ingest.log_records`).

As strict as the trace decoder: a record whose trace or span id is of the wrong length, whose
time is not an integer, or whose attribute value does not fit fails the whole request with an
:class:`~agentdocket.ingest.otlp_values.OtlpDecodeError` naming the place
(``resourceLogs[0].scopeLogs[1].logRecords[3].spanId``), so that nothing of a rejected request
is stored. A record's event name is its ``eventName`` field, else its ``event.name`` attribute
(the older way); its time its ``timeUnixNano``, else its ``observedTimeUnixNano``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentdocket.ingest.otlp_values import (
    OtlpDecodeError,
    hex_id,
    items,
    json_attributes,
    json_document,
    json_value,
    member,
    pb_attributes,
    pb_value,
    uint,
)

EVENT_NAME = "event.name"  # the attribute older SDKs name an event by


@dataclass(frozen=True, slots=True)
class ReceivedLog:
    """A log record as received: ids as hex (empty when the record has none)."""

    trace_id: str
    span_id: str
    time: int  # nanoseconds since 1970
    event_name: str
    body: Any
    attributes: dict[str, Any]
    where: str  # its place in the request, for error messages


def _record(
    trace_id: bytes,
    span_id: bytes,
    time: int,
    observed: int,
    event_name: str,
    body: Any,
    attributes: dict[str, Any],
    where: str,
) -> ReceivedLog:
    if trace_id and (len(trace_id) != 16 or not any(trace_id)):
        raise OtlpDecodeError(f"{where}.traceId: expected 16 bytes, not all zero, or empty")
    if span_id and (len(span_id) != 8 or not any(span_id)):
        raise OtlpDecodeError(f"{where}.spanId: expected 8 bytes, not all zero, or empty")
    for name, value in (("timeUnixNano", time), ("observedTimeUnixNano", observed)):
        if not 0 <= value < 2**64:
            raise OtlpDecodeError(f"{where}.{name}: expected an unsigned 64-bit integer")
    name = event_name or attributes.get(EVENT_NAME) or ""
    if not isinstance(name, str):
        raise OtlpDecodeError(f"{where}.attributes['event.name']: expected a string")
    return ReceivedLog(
        trace_id.hex(), span_id.hex(), time or observed, name, body, attributes, where
    )


def decode_logs_protobuf(body: bytes) -> list[ReceivedLog]:
    """The log records of a binary ``ExportLogsServiceRequest``."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OtlpDecodeError(f"body: not an ExportLogsServiceRequest ({exc})") from None
    out = []
    for ri, rl in enumerate(request.resource_logs):
        for si, sl in enumerate(rl.scope_logs):
            for li, lr in enumerate(sl.log_records):
                where = f"resourceLogs[{ri}].scopeLogs[{si}].logRecords[{li}]"
                value = pb_value(lr.body, f"{where}.body", 0) if lr.HasField("body") else None
                out.append(
                    _record(
                        lr.trace_id,
                        lr.span_id,
                        lr.time_unix_nano,
                        lr.observed_time_unix_nano,
                        lr.event_name,
                        value,
                        pb_attributes(lr.attributes, where),
                        where,
                    )
                )
    return out


def decode_logs_json(body: bytes) -> list[ReceivedLog]:
    """The log records of an OTLP/JSON ``ExportLogsServiceRequest`` (ids as hex; 64-bit
    integers as numbers or decimal strings; lowerCamelCase member names, or the protobuf
    field names)."""
    doc = json_document(body)
    out = []
    for ri, rl in items(doc, "resourceLogs", "resource_logs", "body"):
        rwhere = f"resourceLogs[{ri}]"
        for si, sl in items(rl, "scopeLogs", "scope_logs", rwhere):
            swhere = f"{rwhere}.scopeLogs[{si}]"
            for li, lr in items(sl, "logRecords", "log_records", swhere):
                where = f"{swhere}.logRecords[{li}]"
                out.append(
                    _record(
                        hex_id(lr, "traceId", "trace_id", 16, where, True),
                        hex_id(lr, "spanId", "span_id", 8, where, True),
                        uint(lr, "timeUnixNano", "time_unix_nano", where),
                        uint(lr, "observedTimeUnixNano", "observed_time_unix_nano", where),
                        member(lr, "eventName", "event_name", where, str) or "",
                        json_value(lr.get("body"), f"{where}.body", 0),
                        json_attributes(lr, where),
                        where,
                    )
                )
    return out
