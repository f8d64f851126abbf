"""An OTLP/HTTP logs endpoint in front of another, for the tests of verdicts sent out: it
counts each ``gen_ai.evaluation.result`` record it is given (by ``agentdocket.verdict.id``),
passes requests on to the real receiver behind it, and can be made to fail as endpoints do:

- ``down``: answer every request 503 (the endpoint away);
- ``refuse``: answer 400 to a request holding one of these verdict ids (a record it refuses);
- ``hold_after(n)``: once ``n`` records have passed, keep the next request unanswered until
  :meth:`release` (the sender is then killed with its batch in flight); released, the held
  request is passed on (it reached the endpoint before its sender died) or dropped (it never
  did)."""

from __future__ import annotations

import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

VERDICT_ID = "agentdocket.verdict.id"


def verdict_ids(body: bytes) -> list[str]:
    """The verdict ids of the records of one OTLP/protobuf logs request."""
    request = ExportLogsServiceRequest.FromString(body)
    return [
        a.value.string_value
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for record in sl.log_records
        for a in record.attributes
        if a.key == VERDICT_ID
    ]


class Gate:
    def __init__(self, target: str) -> None:
        self.target = target  # the receiver's logs URL
        self.passed: Counter[str] = Counter()  # records passed on, by verdict id
        self.requests = 0
        self.down = False
        self.refuse: set[str] = set()
        self._hold_after: int | None = None
        self.held = threading.Event()  # a request is being held
        self._released = threading.Event()
        self._deliver = True
        self._lock = threading.Lock()
        gate = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, reply = gate._take(body, dict(self.headers))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                except OSError:  # the sender was killed while its request was held
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}/v1/logs"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Gate:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()

    def hold_after(self, records: int) -> None:
        self._hold_after = records
        self._released.clear()
        self.held.clear()

    def release(self, deliver: bool) -> None:
        """Let the held request go: passed on to the receiver, or dropped."""
        self._hold_after = None
        self._deliver = deliver
        self._released.set()

    def _take(self, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        ids = verdict_ids(body)
        with self._lock:
            self.requests += 1
            if self.down:
                return 503, b""
            if self.refuse.intersection(ids):
                return 400, b""
            hold = self._hold_after is not None and sum(self.passed.values()) >= self._hold_after
        if hold:
            self.held.set()
            self._released.wait()
            if not self._deliver:
                return 503, b""
        reply = httpx.post(
            self.target,
            content=body,
            headers={"Content-Type": headers.get("Content-Type", "application/x-protobuf")},
            timeout=30,
        )
        if reply.status_code == 200:
            with self._lock:
                self.passed.update(ids)
        return reply.status_code, reply.content
