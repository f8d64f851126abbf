"""Refreshing the dashboards' hourly rollups (:mod:`agentdocket.dashboards.rollups` says how
they work).

The database's ``agentdocket_refresh_rollups(from, to)`` replaces the rollup rows of the stale
hours in a range with what the pending functions compute for them, and deletes the marks it
saw. Here each range runs in one transaction the rollups role gives
(:meth:`~agentdocket.store.roles.Rollups.refreshing`: one snapshot, no partition made or
dropped meanwhile, one refresh at a time): a mark committed meanwhile belongs to rows the
snapshot does not see, so it stays for the next refresh. Panels are exact either way (they
read stale hours live); refreshing keeps them fast.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import Rollups
from agentdocket.store.upkeep import Refreshed


def refresh(
    db: Recorder,
    rollups: Rollups,
    *,
    chunk_hours: int = 24,
    progress: Callable[[int, int], None] | None = None,
) -> Refreshed | None:
    """Refresh the stale hours, ``chunk_hours`` of them per transaction (a first refresh of a
    long history is one chunk per day, each committed on its own); ``progress(done, total)``
    is called after each. None when the rollups' layer is not installed (a database opened
    from Python and never given `agentdocket migrate`): nothing reads rollups there."""
    if not rollups.installed():
        return None
    start = time.perf_counter()
    hours = [h for (h,) in db.read("SELECT DISTINCT hour FROM rollup_stale ORDER BY hour")]
    run_hours = verdict_hours = rows = 0
    for i in range(0, len(hours), chunk_hours):
        chunk = hours[i : i + chunk_hours]
        with rollups.refreshing() as conn:
            if conn is None:
                return Refreshed(run_hours, verdict_hours, rows, time.perf_counter() - start, True)
            [(r, v, n)] = db.read_on(
                conn, "SELECT * FROM agentdocket_refresh_rollups(?, ?)", [chunk[0], chunk[-1]]
            )
        run_hours, verdict_hours, rows = run_hours + r, verdict_hours + v, rows + n
        if progress is not None:
            progress(i + len(chunk), len(hours))
    return Refreshed(run_hours, verdict_hours, rows, time.perf_counter() - start)
