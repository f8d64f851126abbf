"""The dashboards' upkeep of their hourly rollups, as the store calls it
(:class:`agentdocket.store.upkeep.Upkeep`, registered under the entry point group
``agentdocket.upkeep`` in ``pyproject.toml``): the hours each write changes are marked stale
in its transaction (:mod:`.stale_hours`), and a refresh recomputes them (:mod:`.refresh`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from agentdocket.dashboards.refresh import refresh
from agentdocket.dashboards.stale_hours import Keyed, StaleHours
from agentdocket.store.projections import Projection
from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import Rollups
from agentdocket.store.upkeep import Refreshed, Upkeep

# Stale hours refreshed per transaction: a day of them (a first refresh of a long history
# commits as it goes), or a month's after retention (see RollupUpkeep.refresh).
HOURS = 24
HOURS_EMPTIED = 24 * 31


class RollupUpkeep(Upkeep):
    """Stale hours marked, and refreshed, on a database playing the rollups role."""

    def __init__(self, db: Recorder, rollups: Rollups) -> None:
        self.db = db
        self.rollups = rollups
        self.stale = StaleHours(db, rollups)

    def before(
        self, conn: Any, proj: Projection, months: dict[str, date], new: frozenset[str]
    ) -> dict[str, Keyed]:
        return self.stale.before(conn, proj, months, new)

    def after(
        self,
        conn: Any,
        proj: Projection,
        months: dict[str, date],
        before: dict[str, Keyed],
        new: frozenset[str],
    ) -> None:
        self.stale.mark(conn, proj, months, before, new)

    def rebuilding(self, conn: Any) -> None:
        self.stale.mark_all(conn)

    def dropping(self, conn: Any, month: date) -> None:
        self.stale.mark_month(conn, month)

    def refresh(
        self, progress: Callable[[int, int], None] | None = None, *, emptied: bool = False
    ) -> Refreshed | None:
        # After retention the stale hours are those of the dropped runs, which hold nothing
        # now but the rare run stored in another month: a month of them per transaction, not
        # a day (each refresh is a few statements; on Citus each a plan sent to every shard,
        # so that a month dropped cost 1.4 s against 0.3 s in 24-hour chunks).
        chunk = HOURS_EMPTIED if emptied else HOURS
        return refresh(self.db, self.rollups, chunk_hours=chunk, progress=progress)
