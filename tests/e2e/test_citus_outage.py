"""Chaos on Citus: with traffic flowing through `serve`, one worker is stopped for a minute
and started again, then the coordinator is restarted. Every trace the stock exporter had
acknowledged is stored exactly once and whole (the receiver spools while appends fail, as for
one server), and while the worker is away the dashboards' role gets an error, never a count
missing that worker's shards. On a cluster of the test's own (a coordinator and two workers,
three PostgreSQL servers started here), so the suite's shared cluster is undisturbed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from agentdocket.store import open_store
from agentdocket.store.backends.citus.cluster import Cluster as CitusCluster
from tests.helpers.chaos import Traffic, batches, check_stored_once, drained, traces
from tests.helpers.citus import WORKERS, Cluster
from tests.helpers.db import cli
from tests.helpers.otlp_server import Server, free_port
from tests.helpers.pg_cluster import Cluster as Node
from tests.helpers.waiting import until

WORKER_AWAY_S = 60.0
COORDINATOR_AWAY_S = 5.0
TRACES = 600  # sent two to a request, 0.3 s apart: about 90 s of traffic
PER_BATCH = 2
PAUSE_S = 0.3
CITUS = ("shared_preload_libraries=citus", "max_connections=200")


def _consecutive_ports(count: int) -> int:
    """The first of ``count`` free ports in a row (Citus's helper finds workers after the
    coordinator's port)."""
    import socket

    for _ in range(50):
        first = free_port()
        try:
            held = []
            for port in range(first, first + count):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                held.append(s)
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
        return first
    raise RuntimeError("no free ports in a row")


@pytest.fixture
def nodes(citus_cluster: Cluster) -> Iterator[list[Node]]:
    """A coordinator and its workers, started (skipped where Citus is not built: the suite's
    cluster fixture says so)."""
    first = _consecutive_ports(WORKERS + 1)
    made = [Node(port=first + i, settings=CITUS) for i in range(WORKERS + 1)]
    try:
        for node in made:
            node.start()
        yield made
    finally:
        for node in made:
            node.remove()


def _dashboard_runs(url: str, role: str, password: str) -> int:
    """What the dashboards' role reads: the runs of the dashboards' view, counted."""
    as_role = make_url(url).set(drivername="postgresql", username=role, password=password)
    conninfo = as_role.render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=10) as conn:
        [(count,)] = conn.execute("SELECT count(*) FROM dashboard_runs").fetchall()
    return int(count)


@pytest.mark.citus
@pytest.mark.slow
def test_a_worker_away_and_a_coordinator_restart_lose_and_duplicate_nothing(
    nodes: list[Node], tmp_path: Path
) -> None:
    coordinator, worker = nodes[0], nodes[1]
    citus = CitusCluster.of(f"postgresql+psycopg://postgres:x@127.0.0.1:{coordinator.port}/x")
    url = citus.make_database("outage")
    cli(url, "migrate")  # the log, runs and verdicts distributed; the dashboards views made
    role, password = f"grafana_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    cli(url, "grafana-role", "--name", role, "--password", password)
    server = Server(url, tmp_path / "spool").start()
    try:
        traffic = Traffic(server.endpoint, batches(traces(TRACES), PER_BATCH), PAUSE_S).start()
        until(lambda: traffic.sent >= 5, "traffic flowing")
        worker.stop()
        away = time.monotonic()
        until(lambda: "spooling" in server.log.read_text(), "the receiver spooling", seconds=60)
        # the dashboards' role: an error while a worker is away, not a count without it
        with pytest.raises(psycopg.Error, match="connection to the remote node"):
            _dashboard_runs(url, role, password)
        time.sleep(max(0.0, WORKER_AWAY_S - (time.monotonic() - away)))  # the outage's length
        worker.start()
        restarted = traffic.sent
        until(lambda: traffic.sent >= restarted + 20, "traffic after the worker's return")
        coordinator.stop()
        time.sleep(COORDINATOR_AWAY_S)  # the restart's length
        coordinator.start()
        assert not traffic.finished.is_set(), "the traffic ended before the coordinator's restart"
        traffic.join(180)
        drained(server, 180)
        acknowledged = traffic.acknowledged
        print(f"acknowledged {len(acknowledged)} of {TRACES} traces across both outages")
        assert len(acknowledged) >= TRACES * 0.9, "too few batches were acknowledged"
        log = server.log.read_text()
    finally:
        server.stop()
    check_stored_once(url, acknowledged, log)
    with open_store(url) as store:
        runs = len(store.reader.list_runs(limit=None))
    assert _dashboard_runs(url, role, password) == runs  # the whole count, once it can be had
