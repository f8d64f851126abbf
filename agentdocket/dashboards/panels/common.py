"""What the dashboards' panels share: the filters every panel applies, the aggregations they
compute (:func:`ratio`, :func:`total`, latency :func:`quantiles`, :func:`measures` and their
:func:`mean`), the table of failing runs each dashboard ends with, and the template variables'
queries (:data:`VARIABLE_SQL`). Scorer names are checked against the registered scorers and
measure names against the measures rollup.
"""

from __future__ import annotations

from agentdocket.dashboards.declared import family, names
from agentdocket.dashboards.macros import variable
from agentdocket.dashboards.measures import MEASURES
from agentdocket.dashboards.panels import run
from agentdocket.dashboards.spec import PanelSpec, panel
from agentdocket.dashboards.views import TOOL_SCORERS as TOOLS

# The filters every panel applies, on a view with time, agent and dataset columns. The
# dashboard_*_stats views are hourly: an hour counts when it overlaps the time range.
HOURS = "time > CAST($__timeFrom() AS timestamptz) - interval '1 hour' AND time <= $__timeTo()"
# The variables agent, dataset and version: written as variable() writes a variable, always
# (see agentdocket.dashboards.macros).
AGENT_AND_DATASET = f"agent IN ({variable('agent')}) AND dataset IN ({variable('dataset')})"
VERSION_IN = f"scorer_version IN ({variable('version')})"
RUNS = f"{HOURS} AND {AGENT_AND_DATASET}"
VERDICTS = f"{RUNS} AND {VERSION_IN}"
TOOL_SCORERS = f"scorer IN {names(*TOOLS)}"
PEER = f"scorer LIKE {family('review.peer')}"
SUBTASK = "substr(scorer, length('review.peer.') + 1)"


def ratio(part: str, whole: str) -> str:
    """sum(part) / sum(whole), as a double (null when whole sums to 0)."""
    return f"CAST(sum({part}) AS double precision) / nullif(sum({whole}), 0)"


def total(column: str) -> str:
    return f"CAST(sum({column}) AS bigint)"


def quantiles(names: dict[str, float], *, time_group: bool = False) -> str:
    """Latency quantiles from dashboard_run_latency (per time group, or overall): in each group
    the first bucket whose running count reaches p of the total, interpolated log-linearly
    inside it. Bucket b holds [2^(b/8), 2^((b+1)/8)) ms."""
    key = "$__timeGroupAlias(time, $__interval), " if time_group else ""
    part = "PARTITION BY time" if time_group else ""
    found = ", ".join(
        f"power(2.0, min(bucket + ({p} * total - below) / n) "
        f"FILTER (WHERE below <= {p} * total AND below + n >= {p} * total) / 8.0) AS {name}"
        for name, p in names.items()
    )
    # Summed per hour first: Grafana's time grouping computes in numeric, slow on many rows.
    hourly = (
        "SELECT time, bucket, CAST(sum(runs) AS double precision) AS n "
        f"FROM dashboard_run_latency WHERE {RUNS} GROUP BY 1, 2"
    )
    group = "1, 2" if time_group else "1"
    buckets = f"SELECT {key}bucket, sum(n) AS n FROM ({hourly}) h GROUP BY {group}"
    running = (
        f"SELECT {'time, ' if time_group else ''}bucket, n, "
        f"sum(n) OVER (w ORDER BY bucket) - n AS below, sum(n) OVER w AS total "
        f"FROM ({buckets}) b WINDOW w AS ({part})"
    )
    sql = f"SELECT {'time, ' if time_group else ''}{found} FROM ({running}) c"
    return sql + (" GROUP BY time ORDER BY time" if time_group else "")


def measures(condition: str, wanted: str) -> str:
    """A filter on dashboard_verdict_measures: ``condition`` on the scorer, and the measures
    ``wanted``."""
    unknown = sorted(set(wanted.split()) - set(MEASURES))
    if unknown:
        raise KeyError(f"no measure named {', '.join(unknown)} in the measures rollup")
    quoted = ", ".join(f"'{n}'" for n in wanted.split())
    return f"{VERDICTS} AND {condition} AND measure IN ({quoted})"


def mean(measure: str) -> str:
    if measure not in MEASURES:
        raise KeyError(f"no measure named {measure} in the measures rollup")
    return (
        f"sum(total) FILTER (WHERE measure = '{measure}') / "
        f"nullif(sum(n) FILTER (WHERE measure = '{measure}'), 0)"
    )


def failing_runs(dashboard: str, which: str, condition: str) -> PanelSpec:
    """The dashboard's table of recent failing runs of its scorers (``which`` names them in
    the title), each linking to its run."""
    return panel(
        dashboard,
        f"Recent failing runs ({which})",
        "table",
        "SELECT time, trace_id, agent, case_id, question, scorer, failure_type, rationale "
        f"FROM dashboard_failing_runs WHERE $__timeFilter(time) AND {AGENT_AND_DATASET} "
        f"AND {condition} "
        "ORDER BY time DESC, trace_id, scorer, scorer_version LIMIT 50",
        "time trace_id agent case_id question scorer failure_type rationale",
        width=24,
        links={
            "trace_id": run.RUN_LINK,
            "case_id": run.runs_link("case_id"),
            "failure_type": run.runs_link("failure_type"),
        },
    )


SCORER_VERSIONS = (
    f"SELECT scorer_version FROM dashboard_scorer_versions WHERE scorer = {variable('scorer')}"
)
SELECTIONS = (
    "SELECT DISTINCT selection FROM dashboard_experiment_stats "
    f"WHERE dataset = {variable('experiment_dataset')} AND {HOURS}"
)
# The template variables' queries, by variable name.
VARIABLE_SQL = {
    "agent": f"SELECT DISTINCT agent FROM dashboard_run_stats WHERE {HOURS}",
    "dataset": f"SELECT DISTINCT dataset FROM dashboard_run_stats WHERE {HOURS}",
    "version": "SELECT DISTINCT scorer_version FROM dashboard_scorer_versions",
    "scorer": "SELECT DISTINCT scorer FROM dashboard_scorer_versions",
    "version_a": SCORER_VERSIONS,
    "version_b": SCORER_VERSIONS,
    "experiment_dataset": f"SELECT DISTINCT dataset FROM dashboard_experiment_stats WHERE {HOURS}",
    "baseline": SELECTIONS,
    "candidate": SELECTIONS,
}
