"""Sending :class:`~agentdocket.outbound.evaluations.Evaluation` records over OTLP, with the
OpenTelemetry SDK's stock log exporters (HTTP/protobuf or gRPC; the ``otlp`` extra).

A batch is exported synchronously and its result read: :meth:`EvaluationSender.send` returns
only when the endpoint took the batch, else raises :class:`SendFailed` (the exporters retry a
transient failure themselves, within their timeout). A caller that keeps a cursor advances it
only past batches that were sent, so a record is sent at least once; it is the same record each
time (same trace, span, time and attributes), which a receiver that keys its events on them,
as agentdocket's does, keeps once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket import __version__
from agentdocket.errors import AgentdocketError
from agentdocket.outbound.evaluations import EVENT_NAME, Evaluation, failed

EXTRA = "pip install 'agentdocket[otlp]'"
PROTOCOLS = ("http/protobuf", "grpc")


class SendFailed(AgentdocketError, RuntimeError):
    """The endpoint did not take a batch (unreachable, refused, or timed out)."""


class ExporterUnavailable(AgentdocketError, RuntimeError):
    """The OTLP exporter packages are not installed."""


class EvaluationSender:
    """Sends evaluation records to one OTLP endpoint.

    ``endpoint``: for ``http/protobuf`` the logs URL (``http://host:4318/v1/logs``; a URL with
    no path gets ``/v1/logs``), for ``grpc`` ``host:port`` (plain text when
    ``insecure``); ``headers`` go with every request (authentication)."""

    def __init__(
        self,
        endpoint: str,
        protocol: str = "http/protobuf",
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        insecure: bool = False,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol {protocol!r}: expected one of {', '.join(PROTOCOLS)}")
        try:
            from opentelemetry.sdk._logs import ReadableLogRecord
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope

            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                    OTLPLogExporter as GrpcExporter,
                )

                self.exporter: Any = GrpcExporter(
                    endpoint=endpoint,
                    insecure=insecure,
                    headers=dict(headers or {}),
                    timeout=timeout,
                )
            else:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

                self.exporter = OTLPLogExporter(
                    endpoint=_logs_url(endpoint), headers=dict(headers or {}), timeout=timeout
                )
        except ImportError as exc:
            raise ExporterUnavailable(
                f"sending over OTLP needs the OpenTelemetry exporters ({exc.name}): {EXTRA}"
            ) from None
        self.endpoint = endpoint
        self._record = ReadableLogRecord
        self._resource = Resource.create({"service.name": "agentdocket"})
        self._scope = InstrumentationScope("agentdocket", __version__)

    def send(self, batch: Sequence[Evaluation]) -> None:
        """Export ``batch``; :class:`SendFailed` unless the endpoint took it."""
        if not batch:
            return
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        result = self.exporter.export([self._readable(e) for e in batch])
        if result != LogRecordExportResult.SUCCESS:
            raise SendFailed(f"{self.endpoint} did not take {len(batch)} evaluation records")

    def reachable(self) -> bool:
        """Whether the endpoint takes a request now (an empty one): told apart from a batch
        it refuses, a failure to send is then an outage."""
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        return bool(self.exporter.export([]) == LogRecordExportResult.SUCCESS)

    def close(self) -> None:
        self.exporter.shutdown()

    def _readable(self, e: Evaluation) -> Any:
        from opentelemetry import trace
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

        judged = SpanContext(
            int(e.trace_id, 16),
            int(e.span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        record = LogRecord(
            timestamp=e.time_ns,
            observed_timestamp=e.time_ns,
            context=trace.set_span_in_context(NonRecordingSpan(judged)),
            severity_number=SeverityNumber.WARN if failed(e) else SeverityNumber.INFO,
            event_name=EVENT_NAME,
            attributes=e.attributes,
        )
        return self._record(record, resource=self._resource, instrumentation_scope=self._scope)


def _logs_url(endpoint: str) -> str:
    """The logs URL of an HTTP endpoint: as given, or ``/v1/logs`` on a URL with no path."""
    from urllib.parse import urlsplit

    return (
        endpoint if urlsplit(endpoint).path not in ("", "/") else endpoint.rstrip("/") + "/v1/logs"
    )
