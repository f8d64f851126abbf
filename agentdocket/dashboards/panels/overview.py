"""The overview dashboard: runs, errors, latency and steps by agent, version, strategy and
model, the dead letters, and the latest failing runs of every scorer. Its panels read the
hourly ``dashboard_run_stats`` and ``dashboard_run_latency`` views."""

from __future__ import annotations

from agentdocket.dashboards.panels.common import RUNS, failing_runs, quantiles, ratio, total
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-overview"
TITLE = (
    "agentdocket: overview",
    "Runs, errors, latency and steps by agent, version, strategy, model",
)

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Runs",
        "stat",
        f"SELECT {total('runs')} AS runs FROM dashboard_run_stats WHERE {RUNS}",
        "runs",
        width=6,
        height=5,
    ),
    panel(
        UID,
        "Error rate",
        "stat",
        f"SELECT {ratio('errors', 'runs')} AS error_rate FROM dashboard_run_stats WHERE {RUNS}",
        "error_rate",
        unit="percentunit",
        width=6,
        height=5,
    ),
    panel(
        UID,
        "Median latency",
        "stat",
        quantiles({"p50_latency_ms": 0.5}),
        "p50_latency_ms",
        unit="ms",
        width=6,
        height=5,
        description="Estimated from latency buckets 9% wide (8 per doubling).",
    ),
    panel(
        UID,
        "Steps per run",
        "stat",
        f"SELECT {ratio('steps', 'runs')} AS steps_per_run FROM dashboard_run_stats WHERE {RUNS}",
        "steps_per_run",
        width=6,
        height=5,
    ),
    panel(
        UID,
        "Runs over time, by agent",
        "timeseries",
        f"SELECT $__timeGroupAlias(time, $__interval), agent AS metric, {total('runs')} AS runs "
        f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1, 2 ORDER BY 1, 2",
        "time metric runs",
    ),
    panel(
        UID,
        "Error rate over time",
        "timeseries",
        f"SELECT $__timeGroupAlias(time, $__interval), {ratio('errors', 'runs')} AS error_rate "
        f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1 ORDER BY 1",
        "time error_rate",
        unit="percentunit",
    ),
    panel(
        UID,
        "Latency over time (p50, p95)",
        "timeseries",
        quantiles({"p50": 0.5, "p95": 0.95}, time_group=True),
        "time p50 p95",
        unit="ms",
        description="Estimated from latency buckets 9% wide (8 per doubling).",
    ),
    panel(
        UID,
        "Steps per run over time",
        "timeseries",
        f"SELECT $__timeGroupAlias(time, $__interval), {ratio('steps', 'runs')} AS steps, "
        f"{ratio('tool_calls', 'runs')} AS tool_calls, {ratio('llm_calls', 'runs')} AS llm_calls "
        f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1 ORDER BY 1",
        "time steps tool_calls llm_calls",
    ),
    panel(
        UID,
        "By agent, version, strategy and model",
        "table",
        f"SELECT agent, agent_version, strategy, model, {total('runs')} AS runs, "
        f"{ratio('errors', 'runs')} AS error_rate, "
        f"sum(latency_ms) / nullif(sum(timed), 0) AS mean_latency_ms, "
        f"{ratio('steps', 'runs')} AS steps_per_run FROM dashboard_run_stats WHERE {RUNS} "
        f"GROUP BY 1, 2, 3, 4 ORDER BY runs DESC, 1, 2, 3, 4",
        "agent agent_version strategy model runs error_rate mean_latency_ms steps_per_run",
        width=24,
    ),
    # The pipeline: records the database refused (migration 0006). Not by agent or dataset: a dead
    # letter is a record that never became part of a run.
    panel(
        UID,
        "Dead letters (unresolved)",
        "stat",
        "SELECT count(*) FILTER (WHERE NOT resolved) AS unresolved FROM dashboard_dead_letters",
        "unresolved",
        width=6,
        description="Records the database refused, kept whole and not stored yet, at any time: "
        "`agentdocket dead-letters list` shows them, `retry` stores them once the cause is fixed.",
    ),
    panel(
        UID,
        "Dead letters over time, by source",
        "timeseries",
        "SELECT $__timeGroupAlias(time, $__interval), source AS metric, count(*) AS dead_letters "
        "FROM dashboard_dead_letters WHERE $__timeFilter(time) GROUP BY 1, 2 ORDER BY 1, 2",
        "time metric dead_letters",
        width=18,
    ),
    failing_runs(UID, "every scorer", "true"),
)
