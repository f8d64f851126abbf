"""PostgreSQL's arrival order: events ordered by their transaction id and position, read up
to the oldest transaction still running (no event committed later can come before), and runs
claimed with session advisory locks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import ArrivalOrder

# The horizon of arrivals a follower may read (PostgreSQL): the oldest transaction still in
# progress in this database, as the current snapshot sees it. The snapshot's xmin would do,
# but it counts every database of the cluster, so that one long transaction elsewhere (an
# analyst's query) would hold every follower back. Of the snapshot's in-progress
# transactions, those that ``pg_stat_activity`` shows running in another database are left
# out; one it does not show (it ended meanwhile, or the role may not read other sessions: give
# it ``pg_read_all_stats``) still counts, so the horizon is never later than is safe.
HORIZON = """(
    SELECT coalesce(
        (
            SELECT min(x) FROM pg_snapshot_xip(snap.s) AS x
            WHERE mod(x::text::int8, 4294967296) NOT IN (
                SELECT backend_xid::text::int8 FROM pg_stat_activity
                WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()
            )
        ),
        pg_snapshot_xmax(snap.s)
    )
    FROM (SELECT pg_current_snapshot() AS s) snap
)"""


class PostgresArrivalOrder(ArrivalOrder):
    """Arrival order by (transaction, position)."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    def arrival_order(self) -> tuple[str, tuple[str, ...]]:
        return "tx::text::int8", ("tx", "position")

    def horizon(self, after_tx: int | None) -> str:
        """SQL of the first transaction a follower may not read yet (reading on from
        ``after_tx``, or for the head): the oldest one still running. Nothing can later be
        committed before a position a follower has passed."""
        return HORIZON

    def arrived_after(self, tx: int, seq: int) -> tuple[str, list[Any]]:
        return f"(tx, position) > (?::text::xid8, ?) AND tx < {self.horizon(tx)}", [str(tx), seq]

    def arrived_by(self, tx: int, seq: int, alias: str) -> tuple[str, list[Any]]:
        return f"({alias}.tx, {alias}.position) <= (?::text::xid8, ?)", [str(tx), seq]

    def readable(self) -> str:
        return f"tx < {self.horizon(None)}"

    def claim_runs(self, key: str, trace_ids: Sequence[str]) -> list[str]:
        # A session advisory lock per (key, run): a killed follower's connection ends, and
        # with it its claims.
        rows = self.db.read(
            "SELECT t FROM unnest(?::text[]) AS t "
            "WHERE pg_try_advisory_lock(hashtext(?), hashtext(t))",
            [list(trace_ids), key],
        )
        return [r[0] for r in rows]

    def release_runs(self, key: str, trace_ids: Sequence[str]) -> None:
        self.db.read(
            "SELECT pg_advisory_unlock(hashtext(?), hashtext(t)) FROM unnest(?::text[]) AS t",
            [key, list(trace_ids)],
        )
