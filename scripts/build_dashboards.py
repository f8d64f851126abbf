"""The Grafana dashboards, as code: ``python scripts/build_dashboards.py`` writes
dashboards/json/*.json.

Built with grafana-foundation-sdk's typed builders. Panels read only the ``dashboard_*`` views
(agentdocket/dashboards/, installed by ``agentdocket migrate``) through the PostgreSQL
datasource chosen by the ``datasource`` variable; every panel's SQL filters on Grafana's time
range and the ``agent`` and ``dataset`` variables (and ``version`` where verdicts are shown).
The panels' SQL and columns are in agentdocket/dashboards/panels.py.
``--check`` exits 1 when the committed JSON is not what this file builds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import barchart, piechart, stat, table, timeseries
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.dashboards import pipeline
from agentdocket.dashboards.panels import OVERVIEW, PANELS, TITLES, VARIABLE_SQL
from agentdocket.dashboards.panels import E as EXPERIMENTS
from agentdocket.dashboards.panels import V as VERSIONS
from agentdocket.dashboards.spec import PanelSpec

OUT = Path(__file__).resolve().parents[1] / "dashboards" / "json"
DATASOURCE_TYPE = "grafana-postgresql-datasource"
DS = common.DataSourceRef(type_val=DATASOURCE_TYPE, uid="${datasource}")


class SqlQuery(cogvariants.Dataquery):
    """A query of Grafana's PostgreSQL datasource, in code mode."""

    def __init__(self, ref_id: str, raw_sql: str, fmt: str) -> None:
        self.ref_id = ref_id
        self.raw_sql = raw_sql
        self.format = fmt

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": DS.to_json(),
            "editorMode": "code",
            "format": self.format,
            "rawQuery": True,
            "rawSql": self.raw_sql,
        }


class Sql(cogbuilder.Builder[SqlQuery]):
    def __init__(self, raw_sql: str, fmt: str = "table", ref_id: str = "A") -> None:
        self._internal = SqlQuery(ref_id, raw_sql, fmt)

    def build(self) -> SqlQuery:
        return self._internal


# --- variables --------------------------------------------------------------------------------


def query_variable(name: str, label: str, sql: str, *, multi: bool = True) -> dash.QueryVariable:
    v = (
        dash.QueryVariable(name)
        .label(label)
        .datasource(DS)
        .query(sql)
        .refresh(models.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(models.VariableSort.ALPHABETICAL_ASC)
    )
    if multi:
        v = (
            v.multi(True)
            .include_all(True)
            .current(models.VariableOption(selected=True, text=["All"], value=["$__all"]))
        )
    return v


def variables(uid: str) -> list[cogbuilder.Builder[models.VariableModel]]:
    source = dash.DatasourceVariable("datasource").label("Database").type(DATASOURCE_TYPE)
    if uid == pipeline.UID:  # the pipeline's own health: no agent or dataset to choose
        return [source]
    if uid == EXPERIMENTS:
        return [
            source,
            query_variable(
                "experiment_dataset", "Dataset", VARIABLE_SQL["experiment_dataset"], multi=False
            ),
            query_variable("baseline", "Baseline", VARIABLE_SQL["baseline"], multi=False),
            query_variable("candidate", "Candidate", VARIABLE_SQL["candidate"], multi=False),
        ]
    out: list[cogbuilder.Builder[models.VariableModel]] = [
        source,
        query_variable("agent", "Agent", VARIABLE_SQL["agent"]),
        query_variable("dataset", "Dataset", VARIABLE_SQL["dataset"]),
    ]
    if uid == VERSIONS:
        out += [
            query_variable("scorer", "Scorer", VARIABLE_SQL["scorer"], multi=False),
            query_variable("version_a", "Version A", VARIABLE_SQL["version_a"], multi=False),
            query_variable("version_b", "Version B", VARIABLE_SQL["version_b"], multi=False),
        ]
    elif uid != OVERVIEW:
        out.append(query_variable("version", "Scorer version", VARIABLE_SQL["version"]))
    return out


# --- building ---------------------------------------------------------------------------------

KINDS: dict[str, Callable[[], Any]] = {
    "timeseries": timeseries.Panel,
    "stat": stat.Panel,
    "table": table.Panel,
    "barchart": barchart.Panel,
    "piechart": piechart.Panel,
}


def build_panel(spec: PanelSpec, panel_id: int) -> Any:
    p = (
        KINDS[spec.kind]()
        .id(panel_id)
        .title(spec.title)
        .datasource(DS)
        .with_target(Sql(spec.sql, spec.fmt))
        .span(spec.width)
        .height(spec.height)
    )
    if spec.unit:
        p = p.unit(spec.unit)
    if spec.description:
        p = p.description(spec.description)
    return p


def build_dashboard(uid: str) -> dict[str, Any]:
    title, description = TITLES[uid]
    d = (
        dash.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["agentdocket"])
        .editable()
        .time("now-7d", "now")
        .refresh("1m")
        .tooltip(models.DashboardCursorSync.CROSSHAIR)
    )
    for v in variables(uid):
        d = d.with_variable(v)
    mine = [spec for spec in PANELS if spec.dashboard == uid]
    for panel_id, spec in enumerate(mine, start=1):
        d = d.with_panel(build_panel(spec, panel_id))
    built: dict[str, Any] = json.loads(json.dumps(d.build(), cls=JSONEncoder))
    return built


def render(uid: str) -> str:
    return json.dumps(build_dashboard(uid), indent=2, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the JSON is not current")
    args = parser.parse_args()
    stale = []
    OUT.mkdir(exist_ok=True)
    for uid in TITLES:
        path = OUT / f"{uid.removeprefix('agentdocket-')}.json"
        text = render(uid)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(
            f"not current (run python scripts/build_dashboards.py): {', '.join(stale)}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
