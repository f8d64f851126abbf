"""The Grafana dashboards and alert rules as JSON, built from the declarations in this package
with grafana-foundation-sdk's typed builders (only the build script and the tests import this
module: the SDK is the ``dashboards`` extra).

Panels read only the ``dashboard_*`` views (:mod:`~agentdocket.dashboards.views`,
:mod:`~agentdocket.dashboards.run`, :mod:`~agentdocket.dashboards.rollups`, installed by
``agentdocket migrate``) through the PostgreSQL datasource chosen by the ``datasource``
variable; every panel's SQL filters on Grafana's time range and the ``agent`` and ``dataset``
variables (and ``version`` where verdicts are shown). The panels' SQL and columns are in
:mod:`agentdocket.dashboards.panels`, the alert rules in :mod:`agentdocket.dashboards.alerts`.
:func:`files` is every file scripts/build_dashboards.py writes under the top-level
``dashboards/`` folder, by its path there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from grafana_foundation_sdk.builders import alerting, barchart, piechart, stat, table, timeseries
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import alerting as alerting_models
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as models

from agentdocket.dashboards import alerts
from agentdocket.dashboards.panels import (
    EXPERIMENTS,
    OVERVIEW,
    PANELS,
    TITLES,
    VARIABLE_SQL,
    VERSIONS,
    costs,
    people,
    pipeline,
    run,
    sessions,
)
from agentdocket.dashboards.spec import PanelSpec

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
    if uid in (pipeline.UID, people.UID):  # the pipeline's health, people's labels: by time
        return [source]
    if uid == run.UID:  # one run, or a list of failing runs filtered by what a link carried
        return [source] + [
            dash.TextBoxVariable(name).label(label) for name, label in run.VARIABLES.items()
        ]
    if uid == sessions.UID:  # the agent, the dataset, and one session a link may carry
        return [
            source,
            query_variable("agent", "Agent", VARIABLE_SQL["agent"]),
            query_variable("dataset", "Dataset", VARIABLE_SQL["dataset"]),
            *(dash.TextBoxVariable(n).label(label) for n, label in sessions.VARIABLES.items()),
        ]
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
    elif uid == costs.UID:  # what a run passing this scorer costs
        out.append(query_variable("scorer", "Scorer", VARIABLE_SQL["scorer"], multi=False))
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
    "traces": table.Panel,  # the SDK has no traces builder: built as a table, retyped below
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
    for column, url in spec.links.items():
        if column != "*":  # "*": every field's, set on the built JSON below
            links = [{"title": LINK_TITLES[column], "url": url}]
            p = p.override_by_name(column, [models.DynamicConfigValue("links", links)])
    return p


LINK_TITLES = {
    "trace_id": "Open this run",
    "baseline_run": "Open this run",
    "candidate_run": "Open this run",
    "judge_trace_id": "Open the judge's trace",
    "case_id": "Failing runs of this case",
    "failure_type": "Runs that failed this way",
    "scorer": "Failing runs of this scorer",
    "tool": "Failing runs that called this tool",
    "session_id": "Open this session",
    "*": "Failing runs in this time range",
}


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
    for spec, p in zip(mine, built["panels"], strict=True):
        if spec.kind == "traces":
            p["type"] = "traces"
        if "*" in spec.links:
            defaults = p.setdefault("fieldConfig", {}).setdefault("defaults", {})
            defaults["links"] = [{"title": LINK_TITLES["*"], "url": spec.links["*"]}]
    return built


def render(uid: str) -> str:
    return json.dumps(build_dashboard(uid), indent=2, sort_keys=True) + "\n"


# --- alert rules ------------------------------------------------------------------------------

DATASOURCE_UID = "agentdocket"  # as provisioning/datasources/agentdocket.yaml names it
# Per-rule keys of the HTTP API that a provisioning file does not take (the group says them).
API_ONLY = ("folderUID", "ruleGroup", "orgID", "id", "updated", "provenance")


class AlertSql(cogvariants.Dataquery):
    """A rule's query: the PostgreSQL datasource by its provisioned uid, as a table."""

    def __init__(self, raw_sql: str) -> None:
        self.raw_sql = raw_sql

    def to_json(self) -> dict[str, object]:
        return {
            "refId": "A",
            "datasource": {"type": DATASOURCE_TYPE, "uid": DATASOURCE_UID},
            "editorMode": "code",
            "format": "table",
            "rawQuery": True,
            "rawSql": self.raw_sql,
        }


class Threshold(cogvariants.Dataquery):
    """A server-side expression: fires where A's value is above 0."""

    def to_json(self) -> dict[str, object]:
        return {
            "refId": "B",
            "type": "threshold",
            "expression": "A",
            "datasource": {"type": "__expr__", "uid": "__expr__"},
            "conditions": [{"evaluator": {"type": "gt", "params": [0]}}],
        }


class _Built(cogbuilder.Builder[cogvariants.Dataquery]):
    def __init__(self, query: cogvariants.Dataquery) -> None:
        self.query = query

    def build(self) -> cogvariants.Dataquery:
        return self.query


def panel_id(dashboard: str, title: str) -> int:
    """The id build_dashboard gives a panel (its place among its dashboard's panels)."""
    mine = [spec.title for spec in PANELS if spec.dashboard == dashboard]
    return mine.index(title) + 1


def build_alerts(thresholds: alerts.Thresholds) -> dict[str, Any]:
    built = []
    for rule in alerts.rules(thresholds):
        pid = panel_id(rule.dashboard, rule.panel)  # also checks that the panel exists
        r = (
            alerting.Rule(rule.title)
            .uid(rule.uid)
            .condition("B")
            .with_query(
                alerting.Query("A")
                .datasource_uid(DATASOURCE_UID)
                .relative_time_range(alerting_models.RelativeTimeRange(from_val=3600, to=0))
                .model(_Built(AlertSql(rule.sql)))
            )
            .with_query(
                alerting.Query("B")
                .datasource_uid("__expr__")
                .relative_time_range(alerting_models.RelativeTimeRange(from_val=3600, to=0))
                .model(_Built(Threshold()))
            )
            .no_data_state("OK")
            .exec_err_state("Error")
            .for_val(rule.for_)
            .labels({"severity": rule.severity, "source": "agentdocket"})
            .annotations(
                {
                    "summary": rule.summary,
                    "description": rule.description,
                    "__dashboardUid__": rule.dashboard,
                    "__panelId__": str(pid),
                }
            )
        )
        data: dict[str, Any] = json.loads(json.dumps(r.build(), cls=JSONEncoder))
        for key in API_ONLY:
            data.pop(key, None)
        built.append(data)
    return {
        "apiVersion": 1,
        "groups": [
            {
                "orgId": 1,
                "name": "agentdocket",
                "folder": "agentdocket",
                "interval": "1m",
                "rules": built,
            }
        ],
    }


def render_alerts(thresholds: alerts.Thresholds) -> str:
    return json.dumps(build_alerts(thresholds), indent=2, sort_keys=True) + "\n"


# --- the files --------------------------------------------------------------------------------

# Where the alert rules go, under the top-level dashboards/ folder.
ALERTS = "provisioning/alerting/agentdocket.json"


def dashboard_file(uid: str) -> str:
    """Where a dashboard's JSON goes, under the top-level dashboards/ folder."""
    return f"json/{uid.removeprefix('agentdocket-')}.json"


def files(thresholds: alerts.Thresholds) -> dict[str, str]:
    """Every file the build writes, by its path under the top-level dashboards/ folder: each
    dashboard's JSON (in :data:`~agentdocket.dashboards.panels.TITLES`' order), then the alert
    rules with ``thresholds``."""
    built = {dashboard_file(uid): render(uid) for uid in TITLES}
    built[ALERTS] = render_alerts(thresholds)
    return built
