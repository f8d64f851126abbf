"""A panel as the dashboards declare it: where it goes, its SQL and the columns it returns.
Each dashboard's module in :mod:`agentdocket.dashboards.panels` declares its panels as a tuple
of :func:`panel` values; nothing is registered on import."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PanelSpec", "panel"]


@dataclass(frozen=True)
class PanelSpec:
    """One panel: where it is, its SQL and the columns that SQL returns."""

    dashboard: str
    title: str
    kind: str  # timeseries, stat, table, barchart, piechart, traces
    sql: str
    columns: tuple[str, ...]
    fmt: str = "table"
    unit: str | None = None
    description: str = ""
    width: int = 12
    height: int = 8
    options: dict[str, Any] = field(default_factory=dict)
    # data links: a column's name -> the URL a click on its value opens (Grafana's
    # ${__value.raw} and ${__url_time_range} are expanded by Grafana)
    links: dict[str, str] = field(default_factory=dict)


def panel(dashboard: str, title: str, kind: str, sql: str, columns: str, **kw: Any) -> PanelSpec:
    """A panel of ``dashboard``: its SQL on one line, ``columns`` split on spaces."""
    fmt = "time_series" if kind == "timeseries" else "table"
    return PanelSpec(
        dashboard, title, kind, " ".join(sql.split()), tuple(columns.split()), fmt, **kw
    )
