"""The pipeline dashboard: is telemetry arriving, does anything wait, is scoring keeping up.

It reads the samples receivers and followers insert every 15 seconds
(``dashboard_pipeline_samples``, ``dashboard_scoring_samples``) and the dead letters, never the
event log, so its cost does not grow with the log; and it needs no Prometheus.
"""

from __future__ import annotations

from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-pipeline"
TITLE = (
    "agentdocket: pipeline",
    "Ingest rate, spool, dead letters, scoring lag and backlog, from what serve and the "
    "followers report",
)
WINDOW = "$__timeFilter(time)"
BUCKET = "$__timeGroupAlias(time, $__interval)"

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Events stored per second",
        "timeseries",
        f"SELECT time, sum(rate) AS events_per_s FROM (SELECT {BUCKET}, process, "
        f"avg(events_per_s) AS rate FROM dashboard_pipeline_samples WHERE {WINDOW} "
        "GROUP BY 1, 2) p GROUP BY 1 ORDER BY 1",
        "time events_per_s",
        unit="ops/s",
        description="Summed over receiver processes (each reports every 15 s).",
    ),
    panel(
        UID,
        "Spool",
        "timeseries",
        f"SELECT {BUCKET}, max(spool_bytes) AS spool_bytes, max(spool_oldest_s) AS oldest_s "
        f"FROM dashboard_pipeline_samples WHERE {WINDOW} GROUP BY 1 ORDER BY 1",
        "time spool_bytes oldest_s",
        description="What waits for the database, and the age of its oldest record (largest over "
        "receiver processes).",
    ),
    panel(
        UID,
        "Scoring lag",
        "timeseries",
        f"SELECT {BUCKET}, max(lag_p50_s) AS p50, max(lag_p95_s) AS p95, max(lag_max_s) AS max "
        f"FROM dashboard_scoring_samples WHERE {WINDOW} GROUP BY 1 ORDER BY 1",
        "time p50 p95 max",
        unit="s",
        description="From a run's last event stored to its verdict stored, per 15 s interval "
        "(largest over followers).",
    ),
    panel(
        UID,
        "Scoring backlog",
        "timeseries",
        f"SELECT {BUCKET}, max(behind_runs) AS finished_runs, max(behind_events) AS events, "
        f"max(deferred) AS deferred FROM dashboard_scoring_samples WHERE {WINDOW} "
        "GROUP BY 1 ORDER BY 1",
        "time finished_runs events deferred",
        description="Finished runs and events after a follower's cursor, and runs a judge budget "
        "put off (largest over followers).",
    ),
    panel(
        UID,
        "Dead letters",
        "timeseries",
        f"SELECT {BUCKET}, count(*) AS dead_letters FROM dashboard_dead_letters "
        f"WHERE {WINDOW} GROUP BY 1 ORDER BY 1",
        "time dead_letters",
        description="Records the database refused, kept with their error (agentdocket "
        "dead-letters list).",
    ),
    panel(
        UID,
        "Followers",
        "table",
        "SELECT follower, process, max(time) AS last_seen, max(verdicts) AS verdicts, "
        "max(errors) AS errors, max(behind_runs) FILTER (WHERE time = last) AS behind_runs "
        "FROM (SELECT *, max(time) OVER (PARTITION BY follower, process) AS last "
        f"FROM dashboard_scoring_samples WHERE {WINDOW}) s GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2",
        "follower process last_seen verdicts errors behind_runs",
        description="Each follower process's latest report (counts since it started).",
    ),
    panel(
        UID,
        "Receivers",
        "table",
        "SELECT process, max(time) AS last_seen, max(spans_received) AS spans_received, "
        "max(events_stored) AS events_stored, max(events_dead_lettered) AS dead_lettered, "
        "max(spans_dropped) AS spans_dropped "
        f"FROM dashboard_pipeline_samples WHERE {WINDOW} GROUP BY 1 ORDER BY 2 DESC, 1",
        "process last_seen spans_received events_stored dead_lettered spans_dropped",
        description="Each receiver process's latest report (counts since it started).",
    ),
)
