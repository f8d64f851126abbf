"""The dashboards' panels: each panel's SQL over the ``dashboard_*`` views (the package's
:mod:`~agentdocket.dashboards.views`, :mod:`~agentdocket.dashboards.run` and
:mod:`~agentdocket.dashboards.rollups`) and the columns it returns, and the template variables'
queries. :mod:`agentdocket.dashboards.build` turns them into Grafana JSON; the tests and
bench/dashboards.py run every query. Scorer names are checked against the registered scorers
and measure names against the measures rollup.

One module per dashboard, each declaring its ``UID``, its ``TITLE`` (title and description)
and its ``PANELS`` in order; what they share is in :mod:`~agentdocket.dashboards.panels.common`.
Nothing is registered on import: :data:`PANELS` and :data:`TITLES` list every dashboard's.

The panels read the hourly ``dashboard_*_stats`` / ``_latency`` / ``_measures`` /
``_transitions`` views, whose cost grows with hours and dimensions, not with runs; only the
list of runs whose verdict changed reads row-level views.

Every panel filters on Grafana's time range and the ``agent`` and ``dataset`` variables, and
verdict panels on ``version`` too; the scorer-versions dashboard compares ``version_a`` with
``version_b`` of one ``scorer``.
"""

from __future__ import annotations

from agentdocket.dashboards.panels import (
    costs,
    experiments,
    grammar,
    overview,
    peer_review,
    people,
    pipeline,
    responses,
    run,
    sessions,
    tool_use,
    versions,
)
from agentdocket.dashboards.panels.common import VARIABLE_SQL
from agentdocket.dashboards.spec import PanelSpec

OVERVIEW = overview.UID
VERSIONS = versions.UID
EXPERIMENTS = experiments.UID

# Every dashboard's panels, dashboard by dashboard.
PANELS: tuple[PanelSpec, ...] = (
    *run.PANELS,
    *pipeline.PANELS,
    *overview.PANELS,
    *tool_use.PANELS,
    *responses.PANELS,
    *peer_review.PANELS,
    *grammar.PANELS,
    *versions.PANELS,
    *experiments.PANELS,
    *people.PANELS,
    *costs.PANELS,
    *sessions.PANELS,
)

# Each dashboard's uid -> its title and description, in the order they are built.
TITLES: dict[str, tuple[str, str]] = {
    overview.UID: overview.TITLE,
    tool_use.UID: tool_use.TITLE,
    responses.UID: responses.TITLE,
    peer_review.UID: peer_review.TITLE,
    grammar.UID: grammar.TITLE,
    versions.UID: versions.TITLE,
    experiments.UID: experiments.TITLE,
    people.UID: people.TITLE,
    costs.UID: costs.TITLE,
    sessions.UID: sessions.TITLE,
    pipeline.UID: pipeline.TITLE,
    run.UID: run.TITLE,
}

__all__ = ["EXPERIMENTS", "OVERVIEW", "PANELS", "TITLES", "VARIABLE_SQL", "VERSIONS"]
