"""``serve --processes 2`` as a real process tree on PostgreSQL: two receivers on one port,
their figures added up on ``/metrics``, one killed and started again without a count going
back, and all of it stopped by one SIGTERM; and how receivers spread the load: a busy one asks
its HTTP client to connect again, and hands a request to an idle sibling."""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from agentdocket.ingest.readers import READERS
from agentdocket.ingest.sink import Sink
from agentdocket.runtime.handover import Board, Handover
from agentdocket.runtime.otlp_http import Receiver, Rejected
from agentdocket.runtime.siblings import Siblings
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.otlp_server import Server, free_port, start_cli
from tests.helpers.waiting import until

SPANS = 3  # per request


@pytest.fixture
def server(pg_url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(pg_url, tmp_path / "spool", "--processes", "2").start()
    yield s
    s.stop()


def _request(n: int) -> bytes:
    """An export request of one run of ``SPANS`` spans, its ids new."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        for i in range(SPANS - 1):
            with tracer.start_as_current_span(f"tool {n}.{i}", attributes={"tool.name": "sql"}):
                pass
    spans: list[ReadableSpan] = list(memory.get_finished_spans())
    provider.shutdown()
    return bytes(encode_spans(spans).SerializeToString())


def _send(server: Server, n: int) -> None:
    """One request on a connection of its own (the kernel picks the receiver that takes it)."""
    reply = httpx.post(
        server.endpoint,
        content=_request(n),
        headers={"content-type": "application/x-protobuf"},
        timeout=30,
    )
    assert reply.status_code == 200, reply.text


def _health(server: Server) -> dict[str, int]:
    body = httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=10).json()
    return {"pid": body["pid"], "spans": body["spans"]}


def _requests(server: Server) -> float:
    text = httpx.get(f"http://127.0.0.1:{server.port}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name == "agentdocket_requests":
            return float(family.samples[0].value)
    raise AssertionError(f"no agentdocket_requests_total in:\n{text}")


def _until(condition: Callable[[], bool], what: str, server: Server) -> None:
    until(condition, what, detail=server.log.read_text)


def _pids(server: Server) -> list[int]:
    found = re.search(r"2 receiver processes \(pids (\d+), (\d+)\)", server.log.read_text())
    assert found is not None, server.log.read_text()
    return [int(p) for p in found.groups()]


def _stored_spans(url: str) -> int:
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        row = conn.execute("SELECT count(DISTINCT span_id) FROM events").fetchone()
        return int(row[0]) if row else 0


def test_two_receivers_share_the_port_and_answer_for_each_other(
    server: Server, pg_url: str
) -> None:
    pids = _pids(server)
    assert server.proc is not None and server.proc.pid not in pids  # the supervisor receives none
    sent = 0
    # Requests on connections of their own, until each receiver has taken some (the kernel
    # spreads connections over the two; a few suffice, the bound is for a stubborn hash).
    while sent < 200:
        _send(server, sent)
        sent += 1
        seen = {h["pid"]: h["spans"] for h in (_health(server) for _ in range(8))}
        if sent >= 6 and len(seen) == 2 and all(seen.values()):
            break
    assert set(seen) == set(pids) and all(seen.values()), seen
    # Whichever receiver answers, /metrics counts both (a sibling's figures are at most about
    # a second old), and every span is stored once.
    _until(lambda: _requests(server) == sent, f"/metrics counting {sent} requests", server)
    assert _stored_spans(pg_url) == sent * SPANS

    # One receiver dies: it is started again, and no count goes back.
    os.kill(pids[1], signal.SIGKILL)
    again = re.compile(r"receiver 1 started again \(pid (\d+)\)")
    _until(lambda: again.search(server.log.read_text()) is not None, "a restart", server)
    match = again.search(server.log.read_text())
    assert match is not None
    pids[1] = int(match.group(1))
    assert _requests(server) >= sent  # the dead one's last figures stay in the totals
    for _ in range(4):
        _send(server, sent)
        sent += 1
    _until(lambda: _requests(server) == sent, f"/metrics counting {sent} requests", server)
    assert _stored_spans(pg_url) == sent * SPANS

    # One SIGTERM stops them all, each letting its requests finish.
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(60) == 0
    said = server.log.read_text()
    assert "agentdocket: stopped by SIGTERM" in said
    assert said.count("stopped by SIGTERM;") == 2  # each receiver's own line
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_spans_arrive_exactly_once_while_a_receiver_is_killed(server: Server, pg_url: str) -> None:
    """Two exporters stream while one receiver is killed mid-stream: requests it held fail and
    are retried (to its sibling, or to it once started again), requests being handed to or by
    it are taken back, and every span's events are stored once."""
    pids = _pids(server)
    runs, tools = 40, 3
    providers = []
    for _ in range(2):  # two exporters: two connections, kept
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=server.endpoint, timeout=30)
        provider.add_span_processor(
            BatchSpanProcessor(exporter, schedule_delay_millis=20, max_export_batch_size=8)
        )
        providers.append(provider)
    half = threading.Event()

    def produce(provider: TracerProvider, first: int) -> None:
        tracer = provider.get_tracer("test")
        for i in range(first, first + runs):
            attributes = {"openinference.span.kind": "AGENT", "input.value": str(i)}
            with tracer.start_as_current_span(f"run {i}", attributes=attributes):
                for j in range(tools):
                    tool = {"openinference.span.kind": "TOOL", "tool.name": f"t{j}"}
                    with tracer.start_as_current_span("tool", attributes=tool):
                        pass
            if i == first + runs // 2:
                half.set()
            time.sleep(0.01)

    producers = [
        threading.Thread(target=produce, args=(p, k * runs)) for k, p in enumerate(providers)
    ]
    for producer in producers:
        producer.start()
    assert half.wait(60)
    os.kill(pids[1], signal.SIGKILL)
    for producer in producers:
        producer.join(60)
    for provider in providers:
        assert provider.force_flush(60_000)
        provider.shutdown()
    with psycopg.connect(psycopg_conninfo(parse_url(pg_url))) as conn:
        kinds = dict(conn.execute("SELECT kind, count(*) FROM events GROUP BY kind").fetchall())
    n = 2 * runs
    assert kinds == {
        "run.started": n,
        "run.finished": n,
        "tool.called": tools * n,
        "tool.returned": tools * n,
    }
    assert "receiver 1 (pid" in server.log.read_text()  # it was killed, and started again


def test_a_second_supervisor_on_the_same_port_is_refused(
    server: Server, pg_url: str, tmp_path: Path
) -> None:
    """SO_REUSEPORT would let a second `serve --processes` join the first unnoticed."""
    log = tmp_path / "second.log"
    second = start_cli(
        pg_url, log, "serve", "--port", str(server.port), "--grpc-port", "0", "--processes", "2"
    )
    assert second.wait(60) != 0
    assert f"cannot listen on 127.0.0.1:{server.port}" in log.read_text()
    _send(server, 0)  # the first goes on


def test_a_port_held_elsewhere_is_a_start_error(pg_url: str, tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        log = tmp_path / "serve.log"
        proc = start_cli(pg_url, log, "serve", "--port", str(port), "--processes", "2")
        assert proc.wait(60) != 0
    said = log.read_text()
    assert f"cannot listen on 127.0.0.1:{port}" in said and "Address already in use" in said


def test_a_crowded_receiver_asks_its_client_to_connect_again(
    sqlite_url: str, tmp_path: Path
) -> None:
    """A kept connection stays with the receiver that took it: where another request is in
    flight when one is answered, its client is asked to connect again (and may find an idle
    sibling); never by a receiver alone."""
    sink = Sink(sqlite_url, spool_dir=tmp_path / "spool")
    receiver = Receiver(sink)
    headers = {"content-type": "application/x-protobuf"}
    try:
        with TestClient(receiver.app) as client:

            def close_asked(n: int, in_flight: int) -> bool:
                receiver.pending += in_flight  # requests another thread is handling
                try:
                    reply = client.post("/v1/traces", content=_request(n), headers=headers)
                finally:
                    receiver.pending -= in_flight
                assert reply.status_code == 200, reply.text
                return reply.headers.get("connection") == "close"

            assert not close_asked(0, in_flight=1)  # a receiver alone keeps every connection
            receiver.siblings = Siblings(tmp_path)
            assert not close_asked(1, in_flight=0)
            assert close_asked(2, in_flight=1)
    finally:
        sink.close()


def test_a_busy_receiver_hands_a_request_to_an_idle_sibling(pg_url: str, tmp_path: Path) -> None:
    """Two receivers as two processes of one serve would be (here in one, over the same Unix
    sockets): a request reaching one with another in flight is stored by the idle one, whose
    answer (a refusal too) is the answer; one that is busy too, or gone, leaves it where it
    arrived."""
    in_flight = [0, 0]
    sinks = [Sink(pg_url, spool_dir=tmp_path / f"spool{k}") for k in range(2)]
    receivers = [Receiver(sink) for sink in sinks]
    handovers = [Handover(tmp_path, k, b"the supervisor's key") for k in range(2)]
    for k, (receiver, handover) in enumerate(zip(receivers, handovers, strict=True)):
        board = Board(in_flight, k)
        receiver.siblings = Siblings(tmp_path, pid=10**7 + k, board=board, handover=handover)
        handover.serve(receiver.take_over)
    busy, idle = receivers
    read = READERS["traces"][True]
    try:
        with busy.slot(), busy.slot():  # this request, and another in flight
            busy.accept(_request(1), read, "test")
        assert (busy.stats.spans, idle.stats.spans) == (0, SPANS)
        assert in_flight == [0, 0]  # each slot counted while held, and given back

        with busy.slot(), busy.slot(), pytest.raises(Rejected) as refused:
            busy.accept(b"not protobuf", read, "test")
        assert refused.value.status == 400  # the sibling's refusal, as it said it

        with idle.slot(), busy.slot(), busy.slot():  # no sibling idle: it stays
            busy.accept(_request(2), read, "test")
        assert (busy.stats.spans, idle.stats.spans) == (SPANS, SPANS)

        handovers[1].close()  # the sibling goes: the board still says idle, its socket is gone
        with busy.slot(), busy.slot():
            busy.accept(_request(3), read, "test")
        assert (busy.stats.spans, idle.stats.spans) == (2 * SPANS, SPANS)
        assert _stored_spans(pg_url) == 3 * SPANS
    finally:
        for handover in handovers:
            handover.close()
        for sink in sinks:
            sink.close()
