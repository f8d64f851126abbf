"""``GET /metrics``: the receiver's and its sink's figures in the Prometheus text format.

Read from memory at each scrape (never from the database): what this process received,
stored, spooled, rejected and dead-lettered since it started, and what waits in the spool.

- ``agentdocket_requests_total``, ``agentdocket_spans_received_total``,
  ``agentdocket_log_records_received_total``, ``agentdocket_events_received_total``: accepted
  requests (both transports, traces and logs) and their spans, log records and events;
- ``agentdocket_requests_rejected_total{status}``: refused requests by HTTP status (gRPC's
  codes are counted under the status they map from: 400, 401, 413, 503);
- ``agentdocket_events_stored_total{path}``: events appended to the database, ``direct`` or
  ``replayed`` from the spool; ``agentdocket_events_spooled_total``;
  ``agentdocket_events_dead_lettered_total``: events the database refused, kept as dead
  letters;
- ``agentdocket_spans_dropped_total{reason}``: spans lost (a full spool);
  ``agentdocket_database_failures_total``: failed attempts to reach or write the database;
- ``agentdocket_spool_bytes``, ``agentdocket_spool_files`` and
  ``agentdocket_spool_oldest_seconds``: what waits for the database, and for how long.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agentdocket.ingest.sink import Sink


class _Counts(Protocol):
    @property
    def requests(self) -> int: ...
    @property
    def spans(self) -> int: ...
    @property
    def log_records(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def rejected(self) -> Mapping[int, int]: ...


class Receiver(Protocol):
    """What is read of a receiver (:class:`agentdocket.runtime.otlp_http.Receiver` has it)."""

    @property
    def stats(self) -> _Counts: ...
    @property
    def sink(self) -> Sink: ...
    @property
    def pending(self) -> int: ...


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ReceiverCollector(Collector):
    """The figures of one receiver and its sink, collected at each scrape."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver

    def collect(self) -> Iterator[Metric]:
        r, sink = self.receiver.stats, self.receiver.sink
        s = sink.stats

        def counter(name: str, text: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(f"agentdocket_{name}", text, value=value)

        yield counter("requests", "Accepted export requests (HTTP and gRPC).", r.requests)
        yield counter("spans_received", "Spans in accepted requests.", r.spans)
        yield counter("log_records_received", "Log records in accepted requests.", r.log_records)
        yield counter("events_received", "Events mapped from accepted requests.", r.events)
        rejected = CounterMetricFamily(
            "agentdocket_requests_rejected", "Refused requests, by HTTP status.", labels=["status"]
        )
        for status, n in sorted(r.rejected.items()):
            rejected.add_metric([str(status)], n)
        yield rejected
        stored = CounterMetricFamily(
            "agentdocket_events_stored", "Events appended to the database.", labels=["path"]
        )
        stored.add_metric(["direct"], s.delivered)
        stored.add_metric(["replayed"], s.replayed)
        yield stored
        yield counter("events_spooled", "Events written to the spool.", s.spooled)
        yield counter(
            "events_dead_lettered", "Events the database refused, kept as dead letters.", s.refused
        )
        dropped = CounterMetricFamily(
            "agentdocket_spans_dropped", "Spans lost, by reason.", labels=["reason"]
        )
        for reason, n in sorted(s.dropped.items()):
            dropped.add_metric([reason], n)
        yield dropped
        yield counter(
            "database_failures", "Failed attempts to reach or write the database.", s.failures
        )
        yield GaugeMetricFamily(
            "agentdocket_spool_bytes", "Bytes waiting in the spool.", value=sink.spool.size()
        )
        yield GaugeMetricFamily(
            "agentdocket_spool_files", "Spool files waiting.", value=len(sink.spool.files())
        )
        oldest = sink.spool.oldest_age()
        yield GaugeMetricFamily(
            "agentdocket_spool_oldest_seconds",
            "Age of the oldest record waiting in the spool (0: none).",
            value=oldest or 0.0,
        )
        yield GaugeMetricFamily(
            "agentdocket_requests_in_flight", "Requests being handled.", value=self.receiver.pending
        )


def exposition(receiver: Receiver, extra: Sequence[Collector] = ()) -> bytes:
    """The current figures, as ``GET /metrics`` answers them (with ``extra`` collectors:
    a follower in the same process)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReceiverCollector(receiver))
    for collector in extra:
        registry.register(collector)
    return bytes(generate_latest(registry))
