"""A request's body to its events, by signal (traces, logs) and encoding (protobuf, JSON): what
both transports of the receiver read with."""

from __future__ import annotations

from collections.abc import Callable

from agentdocket.events import Event
from agentdocket.ingest import span_rules
from agentdocket.ingest.log_records import logs_to_events
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.otlp import decode_json, decode_protobuf
from agentdocket.ingest.otlp_logs import decode_logs_json, decode_logs_protobuf

# A signal's reader: a request's body to (records received, their events).
Reader = Callable[[bytes], tuple[int, list[Event]]]


def read_spans_protobuf(body: bytes) -> tuple[int, list[Event]]:
    spans = decode_protobuf(body)
    return len(spans), spans_to_events(span_rules.apply(spans), keep_unrecognized=True)


def read_spans_json(body: bytes) -> tuple[int, list[Event]]:
    spans = decode_json(body)
    return len(spans), spans_to_events(span_rules.apply(spans), keep_unrecognized=True)


def read_logs_protobuf(body: bytes) -> tuple[int, list[Event]]:
    records = decode_logs_protobuf(body)
    return len(records), logs_to_events(records)


def read_logs_json(body: bytes) -> tuple[int, list[Event]]:
    records = decode_logs_json(body)
    return len(records), logs_to_events(records)


# by signal, then encoding
READERS: dict[str, dict[bool, Reader]] = {
    "traces": {True: read_spans_protobuf, False: read_spans_json},
    "logs": {True: read_logs_protobuf, False: read_logs_json},
}
# each reader's signal and encoding (a request handed to another process names its reader so)
KEYS: dict[Reader, tuple[str, bool]] = {
    read: (signal, protobuf) for signal, by in READERS.items() for protobuf, read in by.items()
}
