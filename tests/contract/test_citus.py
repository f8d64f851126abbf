"""agentdocket on a real Citus cluster (scripts/citus-up: a coordinator and two workers):
`migrate` spreads the log over the workers, append-only holds on every shard, and what the
store does on one node it does there."""

from __future__ import annotations

import json
import random
from typing import Any

import psycopg
import pytest

from agentdocket import dashboards
from agentdocket.store import open_store
from agentdocket.store.arrivals import Position
from agentdocket.store.backends.citus.distribution import CO_LOCATED, REFERENCE
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.migrate import downgrade, upgrade
from agentdocket.store.reading import MONTH_OF, RUN, TRACE_EVENTS
from tests.helpers.citus import WORKERS, Cluster
from tests.helpers.db import SHARED, cli, projections, require_shared
from tests.helpers.factory import many_runs, run_events

pytestmark = pytest.mark.citus
IBM = SHARED / "datasets" / "ibm-coalitions" / "single-models"


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


# --- agentdocket on the cluster -------------------------------------------------------------


def _placement(url: str) -> dict[str, set[int]]:
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        rows = conn.execute(
            "SELECT p.logicalrelid::regclass::text, s.nodeport FROM pg_dist_partition p "
            "JOIN citus_shards s ON s.table_name = p.logicalrelid"
        ).fetchall()
    out: dict[str, set[int]] = {}
    for table, port in rows:
        out.setdefault(table, set()).add(port)
    return out


def test_migrate_spreads_the_log_over_the_workers(
    citus_migrated_url: str, citus_cluster: Cluster
) -> None:
    """The log, runs, verdicts and trace months are distributed by trace id, co-located, on
    both workers, their monthly partitions too; datasets and cases are on every node."""
    placed = _placement(citus_migrated_url)
    workers = set(citus_cluster.ports[1:])
    for table in (*CO_LOCATED, "judge_calls"):
        assert placed[table] == workers, table
    partitions = {t for t in placed if t.startswith("events_")}
    assert len(partitions) >= 4 and all(placed[t] == workers for t in partitions)
    for table in REFERENCE:
        assert placed[table] == set(citus_cluster.ports), table
    with psycopg.connect(psycopg_conninfo(parse_url(citus_migrated_url))) as conn:
        groups = conn.execute(
            "SELECT count(DISTINCT colocationid) FROM pg_dist_partition "
            "WHERE logicalrelid = ANY(%s::regclass[])",
            [sorted(CO_LOCATED)],
        ).fetchone()
        assert groups == (1,)


def _log_shards(worker: psycopg.Connection[Any]) -> list[str]:
    """The shards of the log's monthly partitions on this worker (hidden unless asked for)."""
    worker.execute("SET citus.override_table_visibility = off")
    return [
        str(r[0])
        for r in worker.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' "
            "AND relname ~ '^events_[0-9]{4}_[0-9]{2}_[0-9]+$'"
        ).fetchall()
    ]


def test_a_change_to_the_log_is_refused_on_the_workers_shards(
    citus_migrated_url: str, citus_cluster: Cluster
) -> None:
    """Append-only holds on every shard: an UPDATE or DELETE sent to a worker's shard of the
    log directly (not through the coordinator) is refused, and so it is through the
    coordinator."""
    events = run_events(random.Random(70))
    with open_store(citus_migrated_url) as store:
        assert store.append(events).inserted == len(events)
    name = parse_url(citus_migrated_url).database
    assert name is not None
    refused = 0
    for port in citus_cluster.ports[1:]:
        with psycopg.connect(citus_cluster.conninfo(port, name), autocommit=True) as worker:
            for shard in _log_shards(worker):
                [(n,)] = worker.execute(f'SELECT count(*) FROM "{shard}"').fetchall()
                if not n:
                    continue
                for change in (f'UPDATE "{shard}" SET seq = seq + 1', f'DELETE FROM "{shard}"'):
                    with pytest.raises(psycopg.Error, match="append-only"):
                        worker.execute(change)
                    refused += 1
    assert refused >= 2  # the run's shard was found, on one worker
    coordinator = psycopg.connect(psycopg_conninfo(parse_url(citus_migrated_url)))
    with coordinator, pytest.raises(psycopg.Error, match="append-only"):
        coordinator.execute("UPDATE events SET seq = seq + 1")


def test_runs_are_appended_read_and_rebuilt_on_the_cluster(citus_migrated_url: str) -> None:
    """Appending (new events, then the same again), reading a run by trace id, and rebuilding
    the projections from the log give what they give on one node."""
    events = many_runs(20)
    with open_store(citus_migrated_url) as store:
        first = store.append(events)
        again = store.append(events[:50])
        assert (first.inserted, again.inserted, again.duplicates) == (len(events), 0, 50)
        runs = store.reader.list_runs(limit=None)
        assert len(runs) == 20
        one = events[0].trace_id
        assert store.reader.events(one) == sorted(
            [e for e in events if e.trace_id == one], key=lambda e: (e.seq, e.ts)
        )
        before = projections(store)
        assert store.projections.rebuild() == len(events)
        assert projections(store) == before


def test_a_session_keeps_its_connections_to_the_workers_from_batch_to_batch(
    citus_migrated_url: str, citus_cluster: Cluster
) -> None:
    """A batch writes to nearly every shard; the store's session keeps the connections it
    used, so that the next batch does not open them again (they cost more than its rows)."""
    name = parse_url(citus_migrated_url).database
    assert name is not None

    def worker_backends() -> set[tuple[int, int]]:
        found = set()
        for port in citus_cluster.ports[1:]:
            with psycopg.connect(citus_cluster.conninfo(port, name)) as worker:
                rows = worker.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchall()
                found |= {(port, pid) for (pid,) in rows}
        return found

    with psycopg.connect(psycopg_conninfo(parse_url(citus_migrated_url))) as conn:
        shards = dict(
            conn.execute(
                "SELECT nodeport, count(*) FROM citus_shards "
                "WHERE table_name = 'trace_months'::regclass GROUP BY nodeport"
            ).fetchall()
        )
    rng = random.Random(8)
    with open_store(citus_migrated_url, migrate=False) as store:
        store.append([e for _ in range(40) for e in run_events(rng)])
        first = worker_backends()
        for port, held in shards.items():  # kept after the transaction (else one a worker)
            assert sum(p == port for p, _ in first) >= held
        store.append([e for _ in range(40) for e in run_events(rng)])
        assert worker_backends() == first


def test_migrations_go_down_and_up_again_on_the_cluster(citus_migrated_url: str) -> None:
    """A downgrade brings the tables back to the coordinator first; the upgrade spreads them
    again, with what they hold."""
    events = many_runs(5)
    with open_store(citus_migrated_url) as store:
        store.append(events)
    downgrade(citus_migrated_url, "0011")
    assert _placement(citus_migrated_url) == {}
    upgrade(citus_migrated_url, derived=dashboards.objects())
    assert set(_placement(citus_migrated_url)) >= CO_LOCATED | REFERENCE
    with open_store(citus_migrated_url) as store:
        assert store.reader.counts()["events"] == len(events)
        assert len(store.reader.list_runs(limit=None)) == 5
    downgrade(citus_migrated_url, "base")
    upgrade(citus_migrated_url, derived=dashboards.objects())
    with open_store(citus_migrated_url) as store:
        assert store.reader.counts()["events"] == 0
        assert store.append(events).inserted == len(events)


def test_reading_one_run_by_trace_id_alone_goes_to_one_shard(citus_migrated_url: str) -> None:
    """A run and its events by trace id alone: one task on one shard (the trace's month from
    its co-located trace_months row), not a query fanned out to every shard."""
    events = run_events(random.Random(71))
    with open_store(citus_migrated_url) as store:
        store.append(events)
    tid = events[0].trace_id
    with psycopg.connect(psycopg_conninfo(parse_url(citus_migrated_url))) as conn:
        [(month,)] = conn.execute(MONTH_OF.replace("?", "%s"), [tid]).fetchall()
        for query in (RUN, TRACE_EVENTS):
            [(plan,)] = conn.execute(
                "EXPLAIN (FORMAT JSON) " + query.replace("?", "%s"), [tid, month]
            ).fetchall()
            job = plan[0]["Plan"]["Distributed Query"]["Job"]
            assert job["Task Count"] == 1, query


def _shard_of(worker: psycopg.Connection[Any], trace_id: str) -> str | None:
    """The worker's shard of the log holding ``trace_id``'s events, if it is on this worker."""
    for shard in _log_shards(worker):
        found = worker.execute(f'SELECT 1 FROM "{shard}" WHERE trace_id = %s', [trace_id])
        if found.fetchone():
            return str(shard)
    return None


def test_a_follower_waits_for_a_transaction_committed_on_the_coordinator_but_not_a_worker(
    citus_migrated_url: str, citus_cluster: Cluster
) -> None:
    """Two-phase commit: the coordinator commits first, each worker a moment later. A follower
    must not read past a transaction whose events a worker does not show yet, or it would
    never read them. The moment cannot be held open from outside Citus, so the test makes the
    state it leaves: a transaction committed on the coordinator, its ledger count there, and
    its event in a transaction prepared (not yet committed) on the worker."""
    rng = random.Random(71)
    first, later = run_events(rng), run_events(rng)
    name = parse_url(citus_migrated_url).database
    assert name is not None
    coordinator = psycopg.connect(psycopg_conninfo(parse_url(citus_migrated_url)), autocommit=True)
    with open_store(citus_migrated_url) as store:
        store.append(first)
        with coordinator.transaction():  # the coordinator's commit of the transaction in doubt
            [(in_doubt,)] = coordinator.execute(
                "INSERT INTO arrival_ledger (events) VALUES (1) RETURNING tx::text::int8"
            ).fetchall()
        store.append(later)  # committed everywhere, after it
        for port in citus_cluster.ports[1:]:
            worker = psycopg.connect(citus_cluster.conninfo(port, name), autocommit=True)
            shard = _shard_of(worker, first[0].trace_id)
            if shard is not None:
                break
            worker.close()
        assert shard is not None
        columns = [
            r[0]
            for r in worker.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attnum",
                [shard],
            ).fetchall()
        ]
        made = {"event_id": "gen_random_uuid()", "tx": f"'{in_doubt}'::xid8"}
        values = ", ".join(made.get(c, c) for c in columns)
        worker.execute("BEGIN")
        worker.execute(f'INSERT INTO "{shard}" SELECT {values} FROM "{shard}" LIMIT 1')
        worker.execute("PREPARE TRANSACTION 'agentdocket_in_doubt'")
        try:
            read = store.arrivals.after(Position(), 1000)
            assert {a.trace_id for a in read} == {first[0].trace_id}
            assert len(read) == len(first)
            assert all(a.position.tx < in_doubt for a in read)
            assert store.arrivals.head() == read[-1].position
            worker.execute("COMMIT PREPARED 'agentdocket_in_doubt'")
            read = store.arrivals.after(Position(), 1000)
            assert len(read) == len(first) + 1 + len(later)
            assert {a.trace_id for a in read} == {first[0].trace_id, later[0].trace_id}
        finally:
            held = worker.execute(
                "SELECT 1 FROM pg_prepared_xacts WHERE gid = 'agentdocket_in_doubt'"
            )
            if held.fetchone():
                worker.execute("ROLLBACK PREPARED 'agentdocket_in_doubt'")
            worker.close()
            coordinator.close()


@pytest.mark.slow
def test_reports_and_comparisons_on_the_cluster_are_those_of_one_server(
    citus_migrated_url: str, sqlite_url: str
) -> None:
    """Two models of the IBM study, imported and scored on SQLite and on the cluster: the
    report and the comparison (counts, discordant pairs, p-values) are the same."""
    require_shared(IBM)
    models = ("mistral_all", "mixtral-all")
    scorers = [f"--scorer={s}" for s in ("planner.suffix_match", "tools.slot_fill")]

    def outputs(url: str) -> tuple[Any, Any]:
        for model in models:
            cli(url, "import", "ibm-coalitions", str(IBM / model))
        cli(url, "score", "--dataset", "ibm-coalitions", *scorers)
        report = cli(url, "report", "--dataset", "ibm-coalitions", "--by", "agent")
        compared = cli(
            url,
            *("compare", "--dataset", "ibm-coalitions", "--baseline", models[0]),
            *("--candidate", models[1], "--format", "json"),
        )
        return report, json.loads(compared)

    on_one, on_cluster = outputs(sqlite_url), outputs(citus_migrated_url)
    assert on_cluster == on_one
    assert "mistral_all" in on_one[0] and on_one[1]
