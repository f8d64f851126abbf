"""Chaos: the database stopped and started under OTLP load. Every trace the stock exporter had
acknowledged is stored exactly once. On a PostgreSQL cluster of the test's own, so the rest of
the suite is undisturbed; bounded in traces and time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentdocket.store import open_store
from tests.helpers.chaos import Traffic, batches, check_stored_once, drained, traces
from tests.helpers.otlp_server import Server
from tests.helpers.pg_cluster import Cluster

TRACES = 240  # each an agent span and two tool spans: 6 events
PER_BATCH = 4


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    c.start()
    yield c
    c.remove()


@pytest.mark.slow
def test_every_acknowledged_trace_is_stored_once_across_a_database_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = cluster.create_database("chaos")
    open_store(url).close()  # migrated
    server = Server(url, tmp_path / "spool").start()
    try:
        traffic = Traffic(server.endpoint, batches(traces(TRACES), PER_BATCH), 0.02).start()
        time.sleep(1.0)
        cluster.stop()  # under load: the receiver spools, and keeps answering 200
        time.sleep(3.0)
        cluster.start()
        traffic.join(120)
        drained(server)
        acknowledged = traffic.acknowledged
        print(f"acknowledged {len(acknowledged)} of {TRACES} traces across the restart")
        assert len(acknowledged) >= TRACES * 0.9, "too few batches were acknowledged"
        log = server.log.read_text()
    finally:
        server.stop()
    check_stored_once(url, acknowledged, log)
    assert "spooling" in log  # the outage really happened under load
