"""Alert rules for Grafana's unified alerting, as code beside the dashboards.

Each rule is one SQL query over ``dashboard_*`` views (so it runs as the read-only Grafana
role) that returns a row only for what is wrong: string columns become the alert's labels
(which agent, scorer, process), and ``value`` says by how much. The rule fires when a row has
``value > 0`` and resolves when the query returns nothing. scripts/build_dashboards.py writes
them to ``dashboards/provisioning/alerting/agentdocket.json``, each with a summary naming what
fired and a link to the dashboard panel to look at.

The thresholds are arguments of :func:`rules` (and options of the build script), so a team
can regenerate the file with its own margins.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentdocket.dashboards.panels import OVERVIEW, costs, pipeline

RECENT = "date_trunc('hour', now()) - interval '1 hour'"  # the current and the previous hour


@dataclass(frozen=True)
class Thresholds:
    """When the rules fire."""

    pass_rate_drop: float = 0.10  # a scorer's pass rate this hour below its last 7 days
    error_rate_rise: float = 0.05  # an agent's error rate this hour above its last 7 days
    min_recent: int = 5  # verdicts or runs this hour before a rate is compared
    min_trailing: int = 20  # ... and over the week before
    backlog_runs: int = 1000  # finished runs behind a follower's cursor
    lag_p95_s: float = 60.0  # a follower's 95th-percentile scoring lag
    spend_rise: float = 0.5  # an agent's spend over the last 7 days above the 7 before
    min_spend_usd: float = 1.0  # ... when the 7 before spent at least this much


@dataclass(frozen=True)
class AlertRule:
    """One rule: its query, what it says, and the dashboard (and panel title) to open."""

    uid: str
    title: str
    sql: str
    summary: str
    description: str
    dashboard: str
    panel: str
    severity: str = "warning"
    for_: str = "5m"


def _compare(view: str, keys: str, part: str, whole: str, condition: str, t: Thresholds) -> str:
    """Rows of ``keys`` whose rate this hour (``recent``) and over the week before (``usual``)
    meet ``condition``, with the gap as ``value``."""

    def rate(when: str) -> str:
        return (
            f"CAST(sum({part}) FILTER (WHERE {when}) AS double precision) / "
            f"nullif(sum({whole}) FILTER (WHERE {when}), 0)"
        )

    return (
        f"SELECT {keys}, abs(recent - usual) AS value FROM ("
        f"SELECT {keys}, {rate(f'time >= {RECENT}')} AS recent, "
        f"{rate(f'time < {RECENT}')} AS usual, "
        f"sum({whole}) FILTER (WHERE time >= {RECENT}) AS n_recent, "
        f"sum({whole}) FILTER (WHERE time < {RECENT}) AS n_trailing "
        f"FROM {view} WHERE time >= now() - interval '7 days' GROUP BY {keys}) r "
        f"WHERE n_recent >= {t.min_recent} AND n_trailing >= {t.min_trailing} AND {condition}"
    )


def _pass_rate_drop(t: Thresholds) -> AlertRule:
    """A scorer version passes fewer runs this hour than over the week before."""
    return AlertRule(
        "agentdocket-pass-rate-drop",
        "Pass rate dropped",
        _compare(
            "dashboard_verdict_stats",
            "agent, scorer, scorer_version",
            "passed",
            "decided",
            f"recent < usual - {t.pass_rate_drop}",
            t,
        ),
        "{{ $labels.scorer }}@{{ $labels.scorer_version }} passes fewer runs of "
        "{{ $labels.agent }} this hour than over the last 7 days",
        f"The pass rate this hour is more than {t.pass_rate_drop:.0%} below the trailing "
        "7-day rate (value: the gap). Open the failing runs of that scorer.",
        OVERVIEW,
        "Recent failing runs (every scorer)",
        severity="critical",
    )


def _error_rate_rise(t: Thresholds) -> AlertRule:
    """An agent ends more runs in error this hour than over the week before."""
    return AlertRule(
        "agentdocket-error-rate-rise",
        "Error rate rose",
        _compare(
            "dashboard_run_stats",
            "agent",
            "errors",
            "runs",
            f"recent > usual + {t.error_rate_rise}",
            t,
        ),
        "{{ $labels.agent }} ends more runs in error this hour than over the last 7 days",
        f"The error rate this hour is more than {t.error_rate_rise:.0%} above the trailing "
        "7-day rate (value: the gap).",
        OVERVIEW,
        "Error rate over time",
    )


def _telemetry_dropped(_: Thresholds) -> AlertRule:
    """A receiver or an exporter dropped spans."""
    return AlertRule(
        "agentdocket-telemetry-dropped",
        "Telemetry dropped",
        "SELECT source, CAST(sum(n) AS double precision) AS value FROM ("
        "SELECT 'receiver ' || process AS source, max(spans_dropped) - min(spans_dropped) "
        "AS n FROM dashboard_pipeline_samples WHERE time > now() - interval '15 minutes' "
        "GROUP BY process UNION ALL "
        "SELECT 'exporter ' || reason, sum(count) FROM dashboard_telemetry_dropped "
        "WHERE time > now() - interval '15 minutes' GROUP BY reason) d "
        "GROUP BY source HAVING sum(n) > 0",
        "{{ $labels.source }} dropped spans in the last 15 minutes",
        "Spans were lost: a receiver's spool was full, or an exporter's queue or spool "
        "overflowed (value: spans).",
        pipeline.UID,
        "Receivers",
        severity="critical",
    )


def _dead_letters(_: Thresholds) -> AlertRule:
    """The database refused records."""
    return AlertRule(
        "agentdocket-dead-letters",
        "Events dead-lettered",
        "SELECT source, CAST(count(*) AS double precision) AS value "
        "FROM dashboard_dead_letters WHERE time > now() - interval '15 minutes' "
        "AND NOT resolved GROUP BY source",
        "The database refused events from {{ $labels.source }}",
        "Records the database refused in the last 15 minutes, kept as dead letters "
        "(agentdocket dead-letters list; value: records).",
        pipeline.UID,
        "Dead letters",
    )


def _scoring_backlog(t: Thresholds) -> AlertRule:
    """A follower has too many finished runs behind its cursor."""
    return AlertRule(
        "agentdocket-scoring-backlog",
        "Scoring falls behind",
        "SELECT follower, CAST(max(behind_runs) AS double precision) AS value "
        "FROM dashboard_scoring_samples WHERE time > now() - interval '5 minutes' "
        f"GROUP BY follower HAVING max(behind_runs) > {t.backlog_runs}",
        "Follower {{ $labels.follower }} has finished runs waiting for verdicts",
        f"More than {t.backlog_runs} finished runs behind the follower's cursor (value: runs).",
        pipeline.UID,
        "Scoring backlog",
    )


def _scoring_lag(t: Thresholds) -> AlertRule:
    """A follower's 95th-percentile scoring lag is too high."""
    return AlertRule(
        "agentdocket-scoring-lag",
        "Scoring lag high",
        "SELECT follower, max(lag_p95_s) AS value FROM dashboard_scoring_samples "
        "WHERE time > now() - interval '10 minutes' "
        f"GROUP BY follower HAVING max(lag_p95_s) > {t.lag_p95_s}",
        "Follower {{ $labels.follower }} takes long to judge finished runs",
        f"The 95th percentile of the scoring lag is above {t.lag_p95_s:.0f} s (value: seconds).",
        pipeline.UID,
        "Scoring lag",
    )


def _spend_rise(t: Thresholds) -> AlertRule:
    """An agent spent more on model calls over the last 7 days than over the 7 before."""
    week = "time >= now() - interval '7 days'"
    return AlertRule(
        "agentdocket-spend-rise",
        "Spend rose",
        "SELECT agent, recent / usual - 1 AS value FROM ("
        f"SELECT agent, sum(cost) FILTER (WHERE {week}) AS recent, "
        f"sum(cost) FILTER (WHERE NOT ({week})) AS usual FROM dashboard_cost_hours "
        "WHERE time >= now() - interval '14 days' AND NOT judge GROUP BY agent) s "
        f"WHERE usual >= {t.min_spend_usd} AND recent > usual * {1 + t.spend_rise}",
        "{{ $labels.agent }} spent more on model calls this week than the week before",
        f"The agent's spend over the last 7 days is more than {t.spend_rise:.0%} above the "
        "7 days before (value: the rise, 0.5 = 50%). Open its spend by model and role.",
        costs.UID,
        "Spend by agent",
    )


# Every rule, in the order of the provisioning file.
RULES = (
    _pass_rate_drop,
    _error_rate_rise,
    _telemetry_dropped,
    _dead_letters,
    _scoring_backlog,
    _scoring_lag,
    _spend_rise,
)


def rules(t: Thresholds = Thresholds()) -> list[AlertRule]:
    """Every alert rule, with thresholds ``t``."""
    return [rule(t) for rule in RULES]
