"""The dashboards' layer in the database: the ``dashboard_*`` views Grafana reads, the hourly
rollups' aggregations and refresh function, and the panels' SQL over them.

None of it holds data, so none of it is a migration: ``agentdocket migrate`` re-creates
:func:`objects` after the versioned migrations (see :mod:`agentdocket.store.derived`). The
scorer names and detail keys they read come from the scorers' declarations
(:mod:`agentdocket.dashboards.declared`).

Where everything about the dashboards lives:

- Declarations, here, one per view, rollup object, panel and alert rule:
  :mod:`~agentdocket.dashboards.views` (the row-level views),
  :mod:`~agentdocket.dashboards.run` (the run dashboard's views),
  :mod:`~agentdocket.dashboards.sessions` (the sessions dashboard's),
  :mod:`~agentdocket.dashboards.rollups` (the pending views, the refresh function and the
  ``dashboard_*_stats`` views over the hourly rollups) and
  :mod:`~agentdocket.dashboards.measures` (what the measures rollup holds and how each
  measure is computed); :mod:`~agentdocket.dashboards.panels` (one module per dashboard, with
  :mod:`~agentdocket.dashboards.spec` for a panel and :mod:`~agentdocket.dashboards.macros`
  for how a panel's SQL takes a variable, and Grafana's macros and variables as the tests
  expand them); :mod:`~agentdocket.dashboards.alerts`.
- The builder, here: :mod:`~agentdocket.dashboards.build` turns the panels and alert rules
  into Grafana's JSON (grafana-foundation-sdk, the ``dashboards`` extra; only the build script
  and the tests import it).
- Their upkeep in the database, over the store's roles: :mod:`~agentdocket.dashboards.upkeep`
  (which the store tells of every change: :mod:`~agentdocket.dashboards.stale_hours` marks the
  hours it makes stale, :mod:`~agentdocket.dashboards.refresh` recomputes them) and
  :mod:`~agentdocket.dashboards.grafana_role` (the read-only Grafana role).
- The commands: ``agentdocket refresh-dashboards``
  (:mod:`agentdocket.commands.refresh_dashboards`) and ``agentdocket grafana-role``
  (:mod:`agentdocket.cli`).
- Generated files: the top-level ``dashboards/`` folder (``json/``, written by
  ``scripts/build_dashboards.py``, ``--check`` fails when stale; ``provisioning/`` with the
  alert rules; a compose file for Grafana).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentdocket.store.derived import Derived


def objects() -> list[Derived]:
    """Every derived object, in the order they are created (the declarations imported now:
    the store imports this package's upkeep, which needs none of them)."""
    from agentdocket.dashboards.rollups import objects as rollup_objects
    from agentdocket.dashboards.run import objects as run_objects
    from agentdocket.dashboards.sessions import objects as session_objects
    from agentdocket.dashboards.views import objects as view_objects

    return view_objects() + run_objects() + session_objects() + rollup_objects()


__all__ = ["objects"]
