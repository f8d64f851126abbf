"""What `agentdocket migrate` does on PostgreSQL beyond the migrations, in their transaction:
at the head revision the partitions of this month and the next few are made and, on a Citus
coordinator, the tables distributed; before a downgrade they are brought back to the
coordinator, so that every migration runs on plain tables, as it was written
(:mod:`agentdocket.store.backends.citus.ops`)."""

from __future__ import annotations

import sqlalchemy as sa

from agentdocket.store.backends.citus import ops as citus
from agentdocket.store.months import months_ahead


def at_head(conn: sa.Connection) -> None:
    conn.exec_driver_sql(
        "SELECT agentdocket_ensure_partitions(%(months)s::date[])",
        {"months": sorted(months_ahead())},
    )
    if citus.is_coordinator(conn):
        citus.distribute(conn)


def before_downgrade(conn: sa.Connection) -> None:
    if citus.is_coordinator(conn):
        citus.undistribute(conn)
