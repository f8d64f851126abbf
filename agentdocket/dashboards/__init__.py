"""The dashboards' layer in the database: the ``dashboard_*`` views Grafana reads, the hourly
rollups' aggregations and refresh function, and the panels' SQL over them.

None of it holds data, so none of it is a migration: ``agentdocket migrate`` re-creates
:func:`objects` after the versioned migrations (see :mod:`agentdocket.store.derived`). The
scorer names and detail keys they read come from the scorers' declarations
(:mod:`agentdocket.dashboards.declared`).
"""

from __future__ import annotations

from agentdocket.dashboards.rollups import objects as rollup_objects
from agentdocket.dashboards.run import objects as run_objects
from agentdocket.dashboards.views import objects as view_objects
from agentdocket.store.derived import Derived


def objects() -> list[Derived]:
    """Every derived object, in the order they are created."""
    return view_objects() + run_objects() + rollup_objects()


__all__ = ["objects"]
