"""Citus: the schema spread over a coordinator and its workers, by `agentdocket migrate`.

A PostgreSQL database with the ``citus`` extension is a Citus coordinator. At the head
revision ``migrate`` distributes what :mod:`.distribution` says: the log,
runs, verdicts and trace months by ``trace_id``, co-located (a run and everything about it on
one shard); the judge cache by its key; datasets and cases as reference tables (on every
node). The monthly partitions stay: a distributed partitioned table is distributed partition
by partition, and the partitions made later are distributed as they are made.

Triggers: the log's append-only row triggers go to every shard (Citus runs row triggers on
the shards when ``citus.enable_unsafe_triggers`` is on, which ``migrate`` sets for the
database). The dashboards' stale hours are marked in the writing transaction
(agentdocket.dashboards.stale_hours), not by triggers, since Citus does not run statement
triggers with transition tables.

Before a downgrade the tables are brought back to the coordinator (``undistribute_table``),
so that every migration runs on plain tables, as it was written.
"""

from __future__ import annotations

from typing import Any

from agentdocket.store.backends.citus.distribution import DISTRIBUTED, REFERENCE, placements


def _one(conn: Any, sql: str, params: dict[str, Any] | None = None) -> Any:
    row = conn.exec_driver_sql(sql, params or {}).first()
    return None if row is None else row[0]


# Arrival ledger rows older than this are taken as settled, and retention drops them
# (agentdocket.store.backends.citus.recorder): a two-phase commit in doubt that long is a
# worker lost for that long.
LEDGER_KEEP = "1 day"

# Whether a PostgreSQL database is a Citus coordinator: it has the extension.
IS_COORDINATOR = "SELECT count(*) FROM pg_extension WHERE extname = 'citus'"


def is_coordinator(conn: Any) -> bool:
    """Whether this PostgreSQL database (a SQLAlchemy connection) has the ``citus`` extension."""
    return bool(_one(conn, IS_COORDINATOR))


def _placed(conn: Any) -> set[str]:
    rows = conn.exec_driver_sql("SELECT logicalrelid::regclass::text FROM pg_dist_partition")
    return {r[0] for r in rows}


def distribute(conn: Any) -> list[str]:
    """Distribute what is not yet (idempotent); the tables placed now, in order."""
    conn.exec_driver_sql("SET LOCAL citus.enable_unsafe_triggers = on")
    database = _one(conn, "SELECT current_database()")
    conn.exec_driver_sql(f'ALTER DATABASE "{database}" SET citus.enable_unsafe_triggers = on')
    placed = _placed(conn)
    done = []
    for table, statement in placements():
        if table not in placed:
            conn.exec_driver_sql(statement)
            done.append(table)
    return done


def undistribute(conn: Any) -> list[str]:
    """Bring every distributed and reference table back to the coordinator; the tables
    brought back."""
    placed = _placed(conn)
    if not placed:
        return []
    conn.exec_driver_sql("SET LOCAL citus.enable_unsafe_triggers = on")
    back = []
    for table in [*reversed(DISTRIBUTED), *sorted(REFERENCE)]:
        if table in _placed(conn):  # one may have gone with another (cases' datasets)
            conn.exec_driver_sql(
                f"SELECT undistribute_table('{table}', cascade_via_foreign_keys => true)"
            )
            back.append(table)
    # The tables are the coordinator's alone now: what the migrations change (a sequence, a
    # column) is not the workers' business.
    conn.exec_driver_sql("SET LOCAL citus.enable_ddl_propagation = off")
    return back
