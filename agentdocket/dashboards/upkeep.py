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

    def refresh(self, progress: Callable[[int, int], None] | None = None) -> Refreshed | None:
        return refresh(self.db, self.rollups, progress=progress)
