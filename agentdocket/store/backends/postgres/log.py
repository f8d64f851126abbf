"""PostgreSQL's event log: events copied in (:mod:`.copy`), each partitioned table keyed
with its month, a batch of traces read back as text (faster than psycopg's conversions), and
new traces locked while they take their month (:mod:`.locks`)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import date, timedelta
from typing import Any

from agentdocket.events import Event
from agentdocket.store.backends.postgres.copy import copy_events
from agentdocket.store.backends.postgres.errors import mapped_errors
from agentdocket.store.backends.postgres.locks import NEW_TRACE_LOCK
from agentdocket.store.backends.postgres.recorder import EPOCH, PostgresRecorder
from agentdocket.store.escaping import loads as stored_loads
from agentdocket.store.projections import Projection
from agentdocket.store.roles import EventLog

# A partitioned table's unique keys hold its partition key (migration 0010).
UNIQUE_KEYS = {
    "events": ("trace_id", "event_id", "run_month"),
    "runs": ("trace_id", "run_month"),
    "verdicts": ("trace_id", "verdict_id", "run_month"),
}

# Every column as text or integer: psycopg's conversion of uuid, timestamptz and jsonb values
# costs more than the query (100k plan events: 1.5 s typed, 0.5 s like this), and orjson
# decodes the payloads faster than psycopg's json loader.
SCORING_EVENTS = (
    "SELECT event_id::text, trace_id, span_id, parent_span_id, seq, "
    "(extract(epoch FROM ts) * 1000000)::int8, kind, schema_version, payload::text "
    "FROM events WHERE trace_id = ANY(%s) AND run_month = ANY(%s){kinds} "
    "ORDER BY trace_id, seq, ts, event_id"
)

# The verdicts a scorer version gave some runs, in those runs' months (from trace_months,
# read first: the partitions of the other months are never read).
VERDICT_KEYS = (
    "SELECT trace_id, input_hash FROM verdicts WHERE scorer = %s AND scorer_version = %s "
    "AND trace_id = ANY(%s) AND run_month = ANY(%s::date[])"
)


class PostgresEventLog(EventLog):
    """The event log in monthly partitions."""

    db: PostgresRecorder

    def unique_key(self, table: str) -> tuple[str, ...]:
        return UNIQUE_KEYS[table]

    def lock_new_traces(self, conn: Any, trace_ids: Sequence[str]) -> bool:
        self.db.trace_locks.lock(conn, NEW_TRACE_LOCK, trace_ids)
        return True

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        # Never a prepared statement: psycopg prepares a query after five executions, and the
        # generic plan PostgreSQL then keeps was made while the first big scoring run was
        # filling a table analysed empty: it read every verdict of the version against every
        # run of the batch, seconds per batch (60k runs: 35 s of 42) until autovacuum happened
        # to re-analyse. Planned afresh each time, the probe takes milliseconds.
        if not ids:
            return set()
        with mapped_errors():
            months = sorted(set(self.stored_months(self.db.connection, ids).values()))
            rows = self.db.connection.execute(
                VERDICT_KEYS, [scorer, version, list(ids), months], prepare=False
            ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        params: list[Any] = [list(ids), list(months)]
        query = SCORING_EVENTS.format(kinds="" if kinds is None else " AND kind = ANY(%s)")
        if kinds is not None:
            params.append(sorted(kinds))
        loads = stored_loads
        uuid_ = uuid.UUID
        with mapped_errors(), self.db.connection.cursor() as cur:
            cur.execute(query, params, prepare=False)  # see verdict_keys
            return [
                Event(
                    uuid_(r[0]),
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    EPOCH + timedelta(microseconds=r[5]),
                    r[6],
                    loads(r[8]),
                    r[7],
                )
                for r in cur.fetchall()
            ]

    def lock_for_rebuild(self, conn: Any) -> None:
        # Appends wait while the projections are rebuilt; readers carry on.
        conn.execute("LOCK TABLE events IN SHARE MODE")
        conn.execute("LOCK TABLE runs, verdicts, judge_calls IN EXCLUSIVE MODE")

    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
        redo: bool = False,
    ) -> tuple[int, Projection]:
        redone = redo and self.db.copy_events_redone
        return copy_events(
            conn,
            events,
            months,
            payloads,
            projected,
            clashes=self.db.clashes,
            copy_first=self.db.copy_events_first or redone,
            redo=redone,
        )
