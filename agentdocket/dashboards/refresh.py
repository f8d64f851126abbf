"""Refreshing the dashboards' hourly rollups (PostgreSQL; agentdocket/dashboards/rollups.py
says how they work).

The database's ``agentdocket_refresh_rollups(from, to)`` replaces the rollup rows of the stale
hours in a range with what the pending functions compute for them, and deletes the marks it
saw. Here each range runs in one repeatable-read transaction: a mark committed meanwhile
belongs to rows the snapshot does not see, so it stays for the next refresh. Panels are exact
either way (they read stale hours live); refreshing keeps them fast.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# One refresh at a time; another finds the lock taken and leaves the work to the first.
LOCK_KEY = 0x616764_7266  # "agd" "rf"


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: the hours it recomputed, by what went stale, and how long it took.
    ``busy`` when another refresh was running (it stopped there; the rest waits for later)."""

    run_hours: int = 0
    verdict_hours: int = 0
    rows: int = 0
    seconds: float = 0.0
    busy: bool = False

    def __str__(self) -> str:
        if self.busy:
            return "another refresh is running; left the rest to it"
        return (
            f"{self.run_hours} run hours and {self.verdict_hours} verdict hours refreshed "
            f"({self.rows:,} rollup rows) in {self.seconds:.2f} s"
        )


def refresh(
    conn: Any, *, chunk_hours: int = 24, progress: Callable[[int, int], None] | None = None
) -> Refreshed:
    """Refresh on ``conn`` (a psycopg connection in autocommit mode), ``chunk_hours`` stale
    hours per transaction (a first refresh of a long history is one chunk per day, each
    committed on its own); ``progress(done, total)`` is called after each."""
    from agentdocket.store.backends.postgres.locks import refresh_lock  # PostgreSQL's alone

    start = time.perf_counter()
    hours = [
        h
        for (h,) in conn.execute("SELECT DISTINCT hour FROM rollup_stale ORDER BY hour").fetchall()
    ]
    run_hours = verdict_hours = rows = 0
    for i in range(0, len(hours), chunk_hours):
        chunk = hours[i : i + chunk_hours]
        # no partition made or dropped meanwhile
        with refresh_lock(conn), conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            [(locked,)] = conn.execute(
                "SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY]
            ).fetchall()
            if not locked:
                return Refreshed(run_hours, verdict_hours, rows, time.perf_counter() - start, True)
            [(r, v, n)] = conn.execute(
                "SELECT * FROM agentdocket_refresh_rollups(%s, %s)", [chunk[0], chunk[-1]]
            ).fetchall()
        run_hours, verdict_hours, rows = run_hours + r, verdict_hours + v, rows + n
        if progress is not None:
            progress(i + len(chunk), len(hours))
    return Refreshed(run_hours, verdict_hours, rows, time.perf_counter() - start)
