"""``agentdocket serve``: an OTLP/HTTP trace receiver (Starlette under uvicorn).

``POST /v1/traces`` takes an ``ExportTraceServiceRequest`` as protobuf
(``application/x-protobuf``) or JSON (``application/json``), plain, gzip or deflate. Its spans
go through the tracer's mapping (OpenInference, GenAI in its current and deprecated names, and
ours; any other span is kept as a generic ``step``), are redacted, and are handed to the store,
or to the spool when the database is away. The answer is 200 only once the batch is committed
to the database or fsync'd to the spool; anything that may still be lost gets 503 with
``Retry-After``, and the client (the OTel SDK's exporter retries 503) sends it again. A retried
batch adds nothing: event ids derive from span ids.

Errors: 401 (missing or wrong bearer token), 413 (body, or body once decompressed, over the
limit), 415 (content type or encoding not supported), 400 (undecodable; the message names the
place), 503 (too many requests in flight, or nowhere to keep the batch). A span the database
refuses is no error for the client: the store keeps it as a dead letter and stores the rest.
Spans no convention expects (ending before they start, a span id used twice, a parent cycle)
are stored by the rules of :mod:`agentdocket.ingest.span_rules`.
``POST /v1/feedback`` takes people's labels as JSON (:mod:`agentdocket.runtime.feedback`).
``GET /healthz`` tells whether the database answers, whether anything waits in the spool, and
how many dead letters are kept (``{"total": N, "unresolved": M}``); ``GET /metrics`` gives
this process's figures in the Prometheus text format (:mod:`agentdocket.runtime.metrics`).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from agentdocket.events.model import now
from agentdocket.ingest.otlp_values import OtlpDecodeError
from agentdocket.ingest.readers import READERS, Reader
from agentdocket.ingest.sink import Sink
from agentdocket.runtime.feedback import Invalid, Lookup, StoreLookup, labels_from
from agentdocket.runtime.handover import DONE, NOT_TAKEN, Reply
from agentdocket.runtime.siblings import Siblings

log = logging.getLogger("agentdocket.receiver")

PROTOBUF = "application/x-protobuf"
PROTOBUF_TYPES = (PROTOBUF, "application/protobuf")
JSON = "application/json"
DEFAULT_MAX_BODY = 16 * 1024 * 1024
DEFAULT_MAX_PENDING = 8
RETRY_AFTER_S = 1


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Rejected(Exception):
    """A request turned away: its HTTP status (gRPC maps it to a code), message, headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def _status_body(code: int, message: str, protobuf: bool) -> tuple[bytes, str]:
    """A ``google.rpc.Status`` (as OTLP asks for errors): field 1 code, field 2 message."""
    if not protobuf:
        return orjson.dumps({"code": code, "message": message}), JSON
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text, PROTOBUF


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


# gRPC codes for the Status body, by HTTP status.
_RPC_CODE = {400: 3, 401: 16, 413: 8, 415: 3, 503: 14}


@dataclass
class ReceiverStats:
    requests: int = 0
    spans: int = 0
    log_records: int = 0
    events: int = 0
    rejected: dict[int, int] = field(default_factory=dict)  # by HTTP status


class Receiver:
    """The application and its state: the sink (store, spool, back-off), the token, the
    limits, and how many requests are in flight. ``extra_routes`` join the application's
    own: what the serve process offers beside the receiver (the annotation page), each with
    its own access rules (the bearer token guards the receiver's routes only)."""

    def __init__(
        self,
        sink: Sink,
        *,
        token: str | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        max_pending: int = DEFAULT_MAX_PENDING,
        lookup: Lookup | None = None,
        extra_routes: Sequence[BaseRoute] = (),
    ) -> None:
        self.sink = sink
        # rubrics and runs for POST /v1/feedback, on a connection of their own
        self.lookup = lookup if lookup is not None else StoreLookup(sink.open)
        self.token = token
        self.max_body = max_body
        self.max_pending = max_pending
        self.pending = 0
        self.stats = ReceiverStats()
        # more figures for /metrics from whoever runs in the same process (a follower)
        self.collectors: list[Any] = []
        # the other processes of one `serve --processes`, whose figures /metrics adds
        self.siblings: Siblings | None = None
        self._lock = threading.Lock()  # the HTTP loop and the gRPC threads share the counts
        self.app = Starlette(
            routes=[
                Route("/v1/traces", self.traces, methods=["POST"]),
                Route("/v1/logs", self.logs, methods=["POST"]),
                Route("/v1/feedback", self.feedback, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/metrics", self.metrics, methods=["GET"]),
                *extra_routes,
            ]
        )

    # --- endpoints ------------------------------------------------------------------------------

    async def traces(self, request: Request) -> Response:
        return await self._export(request, "traces")

    async def logs(self, request: Request) -> Response:
        """OTLP log records: the GenAI conventions' content events, joined to their spans
        (:mod:`agentdocket.ingest.log_records`)."""
        return await self._export(request, "logs")

    async def _export(self, request: Request, signal: str) -> Response:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        protobuf = media in PROTOBUF_TYPES
        try:
            self.check_token(request.headers.get("authorization", ""))
            read = self._reader(signal, media, encoding)
            with self.slot():
                body = await self._body(request, encoding)
                client = request.client.host if request.client else "unknown"
                response = await run_in_threadpool(
                    self._ingest, body, read, protobuf, f"otlp-http {client}"
                )
                if self.siblings is not None and self.pending > 1:
                    # Another request is in flight here: this client's next ones may find an
                    # idler sibling, once it connects again (a kept connection stays with the
                    # process that took it; two busy exporters would otherwise share one).
                    response.headers["Connection"] = "close"
                return response
        except Rejected as reject:
            self.rejected(reject)
            content, media = _status_body(_RPC_CODE.get(reject.status, 2), reject.message, protobuf)
            return Response(content, reject.status, reject.headers, media_type=media)

    async def feedback(self, request: Request) -> Response:
        """People's labels (:mod:`agentdocket.runtime.feedback`): 200 once stored or spooled,
        with how many and which of their runs are not (yet) stored."""
        try:
            self.check_token(request.headers.get("authorization", ""))
            media = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media != JSON:
                raise Rejected(415, f"content type {media or '(none)'!r}: send {JSON}")
            with self.slot():
                body = await self._body(request, "identity")
                client = request.client.host if request.client else "unknown"
                answer = await run_in_threadpool(self._labels, body, f"feedback {client}")
                return Response(orjson.dumps(answer), 200, media_type=JSON)
        except Rejected as reject:
            self.rejected(reject)
            message = orjson.dumps({"error": reject.message})
            return Response(message, reject.status, reject.headers, media_type=JSON)

    def _labels(self, body: bytes, source: str) -> dict[str, Any]:
        try:
            events = labels_from(body, self.lookup, now())
        except Invalid as exc:
            headers = {"Retry-After": str(RETRY_AFTER_S)} if exc.status == 503 else None
            raise Rejected(exc.status, exc.message, headers) from None
        outcome = self.sink.deliver(events, source=source)
        if outcome not in ("stored", "spooled"):
            raise Rejected(
                503,
                "the database is away and the spool cannot take the labels; retry later",
                {"Retry-After": str(5 * RETRY_AFTER_S)},
            )
        known = self.lookup.known_runs([e.trace_id for e in events])
        unknown = None if known is None else sorted({e.trace_id for e in events} - known)
        with self._lock:
            self.stats.requests += 1
            self.stats.events += len(events)
        return {"accepted": len(events), "outcome": outcome, "unknown_runs": unknown}

    async def healthz(self, request: Request) -> Response:
        health = await run_in_threadpool(self.sink.health)
        body = {
            "status": "ok",
            "database": "reachable" if health["database"] else "unreachable",
            "spooled": health["spooled"],
            "dead_letters": health["dead_letters"],
            "refused": self.sink.stats.refused,
            "in_flight": self.pending,
            "spans": self.stats.spans,
            "pid": os.getpid(),  # which receiver answered (serve --processes)
        }
        return Response(orjson.dumps(body), 200, media_type=JSON)

    async def metrics(self, request: Request) -> Response:
        from agentdocket.runtime.metrics import CONTENT_TYPE

        body = await run_in_threadpool(self.figures)
        return Response(body, 200, headers={"Content-Type": CONTENT_TYPE})

    def figures(self, *, alone: bool = False) -> bytes:
        """What ``GET /metrics`` answers: this process's figures and its siblings' (``alone``:
        this process's only, as it shares them with its siblings)."""
        from agentdocket.runtime.metrics import exposition

        own = exposition(self, self.collectors)
        if alone or self.siblings is None:
            return own
        # Shared before they are answered: a count once answered is in this process's file,
        # so that none goes back should this process be killed before its next publication.
        self.siblings.publish(own)
        return self.siblings.merged(own)

    # --- steps ----------------------------------------------------------------------------------

    def _reader(self, signal: str, media: str, encoding: str) -> Reader:
        if media not in PROTOBUF_TYPES and media != JSON:
            raise Rejected(415, f"content type {media or '(none)'!r}: send {PROTOBUF} or {JSON}")
        if encoding not in ("identity", "", "gzip", "deflate"):
            raise Rejected(415, f"content encoding {encoding!r}: send gzip, deflate or none")
        return READERS[signal][media in PROTOBUF_TYPES]

    async def _body(self, request: Request, encoding: str) -> bytes:
        declared = request.headers.get("content-length")
        if (
            declared is not None
            and declared.isascii()
            and declared.isdigit()
            and int(declared) > self.max_body
        ):
            raise Rejected(413, f"body of {declared} bytes is over the limit of {self.max_body}")
        chunks = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise Rejected(413, f"body is over the limit of {self.max_body} bytes")
            chunks.append(chunk)
        body = b"".join(chunks)
        if encoding in ("gzip", "deflate"):
            body = self._inflate(body, encoding)
        return body

    def _inflate(self, body: bytes, encoding: str) -> bytes:
        # wbits: 16+ for a gzip wrapper, 32+ to accept zlib or raw-less deflate headers.
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if encoding == "gzip" else 32 + 15)
        try:
            out = inflater.decompress(body, self.max_body + 1)
            if len(out) > self.max_body or inflater.unconsumed_tail:
                raise Rejected(
                    413, f"body is over the limit of {self.max_body} bytes once inflated"
                )
            if not inflater.eof:
                raise Rejected(400, f"body: truncated {encoding} stream")
        except zlib.error as exc:
            raise Rejected(400, f"body: not valid {encoding} ({exc})") from None
        return out

    def accept(self, body: bytes, read: Reader, source: str) -> None:
        """Decode a request's spans (or log records) and make their events durable (stored or
        spooled), or raise :class:`Rejected`: what both transports do with a request. With
        another request in flight here, an idle sibling process may take it instead."""
        if self.siblings is not None:
            reply = self.siblings.hand_over(read, body, source, self.pending)
            if reply is not None:
                if reply.status != 200:
                    raise Rejected(reply.status, reply.message, reply.headers)
                return
        self.accept_here(body, read, source)

    def take_over(self, signal: str, protobuf: bool, body: bytes, source: str) -> Reply:
        """A request a sibling process handed over (:mod:`agentdocket.runtime.handover`)."""
        if self.pending >= self.max_pending:
            return NOT_TAKEN
        try:
            with self.slot():
                self.accept_here(body, READERS[signal][protobuf], source)
        except Rejected as reject:
            return Reply(reject.status, reject.message, reject.headers)
        return DONE

    def accept_here(self, body: bytes, read: Reader, source: str) -> None:
        """:meth:`accept` in this process."""
        try:
            received, events = read(body)
        except OtlpDecodeError as exc:
            raise Rejected(400, str(exc)) from None
        outcome = self.sink.deliver(events, source=source) if events else "stored"
        if outcome not in ("stored", "spooled"):
            raise Rejected(
                503,
                "the database is away and the spool cannot take the batch; retry later",
                {"Retry-After": str(5 * RETRY_AFTER_S)},
            )
        with self._lock:
            self.stats.requests += 1
            if read in READERS["logs"].values():
                self.stats.log_records += received
            else:
                self.stats.spans += received
            self.stats.events += len(events)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """One of ``max_pending`` places for a request in flight, else :class:`Rejected` 503."""
        with self._lock:
            if self.pending >= self.max_pending:
                raise Rejected(
                    503,
                    f"{self.pending} requests in flight; retry later",
                    {"Retry-After": str(RETRY_AFTER_S)},
                )
            self.pending += 1
            if self.siblings is not None:
                self.siblings.in_flight(self.pending)
        try:
            yield
        finally:
            with self._lock:
                self.pending -= 1
                if self.siblings is not None:
                    self.siblings.in_flight(self.pending)

    def check_token(self, given: str) -> None:
        """``given``: the Authorization header's value (or gRPC's metadata)."""
        if self.token is None:
            return
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            raise Rejected(
                401,
                "missing or wrong bearer token (Authorization: Bearer <token>)",
                {"WWW-Authenticate": 'Bearer realm="agentdocket"'},
            )

    def rejected(self, reject: Rejected) -> None:
        with self._lock:
            self.stats.rejected[reject.status] = self.stats.rejected.get(reject.status, 0) + 1

    def _ingest(self, body: bytes, read: Reader, protobuf: bool, source: str) -> Response:
        self.accept(body, read, source)
        # An empty Export{Trace,Logs}ServiceResponse: full success.
        return Response(b"" if protobuf else b"{}", 200, media_type=PROTOBUF if protobuf else JSON)


def create_app(sink: Sink, **options: Any) -> Starlette:
    return Receiver(sink, **options).app
