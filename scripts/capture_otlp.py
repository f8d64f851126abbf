"""Capture the OTLP requests a program sends, as OTLP/JSON files: the corpus of real spans.

    python scripts/capture_otlp.py --out tests/fixtures/otlp/FRAMEWORK -- python agent.py

starts a small OTLP/HTTP collector on 127.0.0.1 (``/v1/traces``, ``/v1/logs``, ``/v1/metrics``;
protobuf or JSON, plain or gzip), runs the command with ``OTEL_EXPORTER_OTLP_ENDPOINT`` and
``OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`` pointing at it, and when the command ends writes
each trace and log request it received, in arrival order, as ``NNN-traces.json`` /
``NNN-logs.json`` (OTLP/JSON: ids as hex, as the specification's JSON encoding has them).
Metrics are answered and not kept. The files replay through ``agentdocket serve`` (or the
receiver's decoders) exactly as the stock exporters sent them, so the mapping is tested on real
spans without installing the framework. A user's bug report can be turned into a fixture the
same way: run their agent under this script.

Run it with the project's environment (it needs ``opentelemetry-proto``); the command may use
any other environment (a throwaway venv with the framework).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import subprocess
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}
ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids(value: Any) -> Any:
    """protobuf's JSON writes bytes as base64; OTLP/JSON writes trace and span ids as hex."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ID_KEYS and isinstance(v, str):
                out[k] = base64.b64decode(v).hex()
            else:
                out[k] = _hex_ids(v)
        return out
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def to_json(signal: str, body: bytes, content_type: str) -> dict[str, Any]:
    """One request as an OTLP/JSON document."""
    if content_type.startswith("application/json"):
        doc: dict[str, Any] = json.loads(body)
        return doc
    message: Any = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    message.ParseFromString(body)
    return _hex_ids(MessageToDict(message))  # type: ignore[no-any-return]


class Collector(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.received: list[tuple[str, dict[str, Any]]] = []


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        signal = SIGNALS.get(self.path.split("?")[0])
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        if signal is None:
            self.send_response(404)
            self.end_headers()
            return
        content_type = self.headers.get("Content-Type") or "application/x-protobuf"
        if signal != "metrics":
            doc = to_json(signal, body, content_type)
            with self.server.lock:
                self.server.received.append((signal, doc))
        self.send_response(200)
        reply = b"{}" if content_type.startswith("application/json") else b""
        self.send_header("Content-Type", content_type.split(";")[0])
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the NNN-*.json files")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the program to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the program to run after --")
    collector = Collector()
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{collector.server_address[1]}"
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    code = subprocess.call(command, env=env)
    collector.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("[0-9][0-9][0-9]-*.json"):
        old.unlink()
    for i, (signal, doc) in enumerate(collector.received):
        path = args.out / f"{i:03d}-{signal}.json"
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(collector.received)} requests written to {args.out}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
