"""The recorder and roles of a Citus coordinator (:mod:`.ops`): PostgreSQL's, with what a
cluster changes.

- Rows known to be new (the months of traces new in a batch, their runs) are copied straight
  into the distributed table (COPY routes each to its shard); a duplicate key found on a
  worker reaches the coordinator as an internal error, not as a unique violation, so that
  error too sends the rows through the staging table. Which keys are stored is never asked
  first (a query to every shard): rows not known new are merged. Events are COPYed only where
  the whole write is run again if that fails (``copy_events_redone``).
- **Arrival order across nodes.** A follower reads events of transactions older than every
  transaction still running (``HORIZON``), which on a cluster is the coordinator's view only.
  A transaction that wrote to several workers commits on the coordinator first and then on
  each worker (two-phase commit): for a moment the coordinator has it as committed while a
  worker does not show its events yet, and a follower that read past it then would never read
  them. So each appending transaction also counts its events in ``arrival_ledger`` on the
  coordinator (migration 0015), and a transaction is *settled* once that many of its events
  are visible; a follower reads only up to the first transaction that is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy.engine import URL

from agentdocket.events import Event
from agentdocket.store.backends.citus.ops import IS_COORDINATOR, LEDGER_KEEP
from agentdocket.store.backends.postgres.arrivals import HORIZON, PostgresArrivalOrder
from agentdocket.store.backends.postgres.copy import CITUS_CLASHES
from agentdocket.store.backends.postgres.errors import mapped_errors
from agentdocket.store.backends.postgres.log import PostgresEventLog
from agentdocket.store.backends.postgres.months import PostgresMonths
from agentdocket.store.backends.postgres.recorder import PostgresRecorder
from agentdocket.store.backends.postgres.rollups import (
    CitusReaders,
    PostgresReaders,
    PostgresRollups,
)
from agentdocket.store.projections import Projection
from agentdocket.store.roles import Roles

# transactions checked per read (a follower far behind catches up this many at a time)
SETTLE = 1000

COUNT = (
    "INSERT INTO arrival_ledger (events) VALUES (%s) "
    "ON CONFLICT (tx) DO UPDATE SET events = arrival_ledger.events + excluded.events"
)
LEDGER = (
    "SELECT tx::text::int8, events FROM arrival_ledger "
    "WHERE tx >= %s::text::xid8 AND tx < %s::text::xid8 "
    f"AND at > statement_timestamp() - interval '{LEDGER_KEEP}' "
    "ORDER BY tx {order} LIMIT %s"
)
VISIBLE = (
    "SELECT tx::text::int8, count(*) FROM events WHERE tx = ANY(%s::text[]::xid8[]) GROUP BY tx"
)


# The most shards of the log any worker holds: the connections to it one write to every shard
# uses (co-located shards share one). None before the log is distributed (`agentdocket migrate`).
SHARDS_PER_WORKER = (
    "SELECT max(n) FROM (SELECT count(*) AS n FROM pg_dist_shard s JOIN pg_dist_placement p "
    "USING (shardid) WHERE s.logicalrelid = to_regclass('trace_months') GROUP BY p.groupid) x"
)


class CitusRecorder(PostgresRecorder):
    """PostgreSQL's recorder on a Citus coordinator (see the module)."""

    # a worker's duplicate key reaches the coordinator as an internal error; and which keys
    # are stored is a query to every shard, never asked
    clashes = CITUS_CLASHES
    probe_keys = False
    # Events are COPYed to their shards only where the whole write is run again if the COPY
    # fails (the receivers' and appends' path), never going on in the transaction after it:
    # a batch of events is where a refusal (a worker's trigger, a constraint) or a duplicate
    # (a retried request) comes, and after a COPY that failed on a worker the full suite saw
    # the transaction left aborted now and then (rolling back to the savepoint did not
    # restore it), which a refusal must never do. Elsewhere they go through the staging
    # table. COPYed, a batch costs the coordinator 20 us of CPU an event, 26 staged; each
    # worker 13-19 us, 18-19 staged (bench/citus_append.py).
    copy_events_first = False
    copy_events_redone = True

    def __init__(self, url: URL) -> None:
        super().__init__(url)
        # A batch writes to nearly every shard, over a connection to the shard's worker for
        # each shard it copies rows into. After a transaction Citus keeps one connection a
        # worker (citus.max_cached_conns_per_worker) and opens the others again for the next
        # batch, which costs more than the batch's statements: 3.3k events/s appended, 7.0k
        # with every connection kept, 3.5k with half of them. This session keeps as many as
        # a write to every shard uses.
        with mapped_errors():
            [(shards,)] = self.connection.execute(SHARDS_PER_WORKER).fetchall()
            if shards:
                self.connection.execute(f"SET citus.max_cached_conns_per_worker = {int(shards)}")


class CitusEventLog(PostgresEventLog):
    """The event log, each appending transaction counted in the arrival ledger."""

    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
        redo: bool = False,
    ) -> tuple[int, Projection]:
        inserted, projection = super().insert_events(
            conn, events, months, payloads, projected, redo
        )
        if inserted:  # in the caller's savepoint: undone with the rows it counts
            with mapped_errors():
                conn.execute(COUNT, [inserted])
        return inserted, projection


class CitusArrivalOrder(PostgresArrivalOrder):
    """Arrival order read up to the first transaction not yet settled (see the module)."""

    def horizon(self, after_tx: int | None) -> str:
        return f"'{int(self.settled_horizon(after_tx))}'::xid8"

    def settled_horizon(self, after_tx: int | None) -> int:
        """The first transaction a follower may not read yet: the coordinator's horizon, or
        an earlier transaction the ledger counts more events of than are visible. From
        ``after_tx`` on (a follower's cursor), or among the latest ledger rows (None)."""
        with mapped_errors():
            [(horizon,)] = self.db.connection.execute(f"SELECT {HORIZON}::text::int8").fetchall()
            order = "DESC" if after_tx is None else ""
            counted = self.db.connection.execute(
                LEDGER.format(order=order), [str(after_tx or 0), str(horizon), SETTLE + 1]
            ).fetchall()
            checked = sorted(counted[:SETTLE])
            if not checked:
                return int(horizon)
            visible: dict[int, int] = dict(
                self.db.connection.execute(VISIBLE, [[str(t) for t, _ in checked]]).fetchall()
            )
        for tx, events in checked:
            if visible.get(tx, 0) < events:
                return int(tx)
        if after_tx is not None and len(counted) > SETTLE:
            return int(counted[SETTLE][0])  # the rest is checked on the next read
        return int(horizon)


def open_postgres(url: URL) -> Roles:
    """The PostgreSQL database at ``url`` (checked by its backend), open: with Citus's
    recorder and roles where it is a coordinator."""
    db = PostgresRecorder(url)
    if not db.read(IS_COORDINATOR)[0][0]:
        return Roles(
            db,
            PostgresEventLog(db),
            PostgresArrivalOrder(db),
            PostgresMonths(db),
            PostgresRollups(db),
            PostgresReaders(db),
        )
    db.close()
    citus = CitusRecorder(url)
    return Roles(
        citus,
        CitusEventLog(citus),
        CitusArrivalOrder(citus),
        PostgresMonths(citus),
        PostgresRollups(citus),
        CitusReaders(citus),
    )
