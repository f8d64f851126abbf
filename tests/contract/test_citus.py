"""The local Citus cluster (scripts/citus-up) is real: a coordinator with two workers, and a
table distributed by trace id spreads its shards over both, with the rows where the coordinator
routes them."""

from __future__ import annotations

import psycopg
import pytest

from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.citus import WORKERS, Cluster

pytestmark = pytest.mark.citus


def test_the_cluster_has_a_coordinator_and_its_workers(citus_url: str) -> None:
    with psycopg.connect(psycopg_conninfo(parse_url(citus_url))) as conn:
        workers = conn.execute("SELECT * FROM citus_get_active_worker_nodes()").fetchall()
        assert len(workers) == WORKERS
        [(version,)] = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
        assert version.startswith("13.2")


def test_a_table_distributed_by_trace_id_has_shards_on_every_worker(
    citus_url: str, citus_cluster: Cluster
) -> None:
    with psycopg.connect(psycopg_conninfo(parse_url(citus_url)), autocommit=True) as conn:
        conn.execute("CREATE TABLE spans (trace_id text, n int)")
        conn.execute("SELECT create_distributed_table('spans', 'trace_id', shard_count => 8)")
        conn.execute("INSERT INTO spans SELECT md5(i::text), i FROM generate_series(1, 200) AS i")
        placed = conn.execute(
            "SELECT nodeport, count(*) FROM citus_shards WHERE table_name = 'spans'::regclass "
            "GROUP BY nodeport ORDER BY nodeport"
        ).fetchall()
        assert [port for port, _ in placed] == citus_cluster.ports[1:]
        assert sum(n for _, n in placed) == 8
        [(total,)] = conn.execute("SELECT count(*) FROM spans").fetchall()
        assert total == 200
    # the rows are on the workers, not on the coordinator
    name = parse_url(citus_url).database
    assert name is not None
    held = 0
    for port in citus_cluster.ports[1:]:
        with psycopg.connect(citus_cluster.conninfo(port, name)) as worker:
            worker.execute("SET citus.override_table_visibility = off")  # shards are hidden
            shards = worker.execute(
                "SELECT relname FROM pg_class WHERE relname LIKE 'spans\\_%' AND relkind = 'r'"
            ).fetchall()
            for (shard,) in shards:
                held += worker.execute(f'SELECT count(*) FROM "{shard}"').fetchone()[0]  # type: ignore[index]
    assert held == 200
