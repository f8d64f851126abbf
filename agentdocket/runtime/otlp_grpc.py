"""OTLP over gRPC: ``TraceService/Export`` and ``LogsService/Export`` on the same
:class:`Receiver` as OTLP/HTTP.

Most OpenTelemetry SDKs export over gRPC by default (port 4317). The guarantees are the HTTP
receiver's: the call succeeds only once its spans are committed to the database or fsync'd to
the spool. A request turned away gets the gRPC code for it:

- ``UNAUTHENTICATED``: no or a wrong ``authorization: Bearer <token>`` metadata entry;
- ``INVALID_ARGUMENT``: spans that do not decode, the message naming the place;
- ``RESOURCE_EXHAUSTED``: a message over the size limit (gRPC's own check);
- ``UNAVAILABLE`` with a ``google.rpc.RetryInfo`` delay: too many requests in flight, or
  nowhere to keep the batch; the stock exporters wait that long and send it again.
"""

from __future__ import annotations

import logging
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo

from agentdocket.ingest.readers import READERS, Reader
from agentdocket.runtime.otlp_http import RETRY_AFTER_S, Receiver, Rejected

log = logging.getLogger("agentdocket.receiver")

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    415: grpc.StatusCode.INVALID_ARGUMENT,
    503: grpc.StatusCode.UNAVAILABLE,
}


class GrpcReceiver:
    """A gRPC server answering ``TraceService/Export`` through ``receiver``."""

    def __init__(self, receiver: Receiver, host: str, port: int, shared: bool = False) -> None:
        self.receiver = receiver
        # raw bytes in (decoded by our decoder, which names the place of a bad field) and out
        # (an empty Export{Trace,Logs}ServiceResponse: full success)
        handlers = [
            grpc.method_handlers_generic_handler(
                service,
                {
                    "Export": grpc.unary_unary_rpc_method_handler(
                        self._exporter(READERS[signal][True])
                    )
                },
            )
            for service, signal in ((SERVICE, "traces"), (LOGS_SERVICE, "logs"))
        ]
        limit = receiver.max_body
        self.server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=receiver.max_pending + 2, thread_name_prefix="agentdocket-grpc"
            ),
            handlers=handlers,
            # exclusive, as HTTP's port is: gRPC would otherwise bind with SO_REUSEPORT and a
            # second server on the same port would silently take part of the traffic; unless
            # ``shared``: the processes of one `serve --processes` share it on purpose
            options=[
                ("grpc.max_receive_message_length", limit),
                ("grpc.so_reuseport", 1 if shared else 0),
            ],
        )
        try:
            self.port = self.server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:  # grpcio raises where older releases returned 0
            self.port = 0
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")

    def start(self) -> GrpcReceiver:
        self.server.start()
        return self

    def stop(self, grace: float) -> None:
        """Stop taking calls; those in flight have ``grace`` seconds to finish."""
        self.server.stop(grace).wait()

    def _exporter(self, read: Reader) -> Any:
        def export(request: bytes, context: grpc.ServicerContext) -> bytes:
            return self._export(request, context, read)

        return export

    def _export(self, request: bytes, context: grpc.ServicerContext, read: Reader) -> bytes:
        metadata = dict(context.invocation_metadata() or ())
        peer = context.peer() or "unknown"
        try:
            self.receiver.check_token(str(metadata.get("authorization", "")))
            with self.receiver.slot():
                self.receiver.accept(request, read, f"otlp-grpc {_host(peer)}")
        except Rejected as reject:
            self.receiver.rejected(reject)
            if reject.status == 503:
                delay = Duration(seconds=int(reject.headers.get("Retry-After", RETRY_AFTER_S)))
                context.set_trailing_metadata(
                    (
                        (
                            "google.rpc.retryinfo-bin",
                            RetryInfo(retry_delay=delay).SerializeToString(),
                        ),
                    )
                )
            context.abort(_CODES.get(reject.status, grpc.StatusCode.UNKNOWN), reject.message)
        return b""


def _host(peer: str) -> str:
    """``ipv4:127.0.0.1:5555`` -> ``127.0.0.1``."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return rest.rsplit(":", 1)[0].strip("[]")
    return peer
