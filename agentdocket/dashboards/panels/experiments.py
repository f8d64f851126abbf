"""The experiments dashboard: two sets of runs of one dataset (``baseline`` and ``candidate``,
as ``agentdocket compare`` selects them), scorer by scorer and case by case."""

from __future__ import annotations

from agentdocket.dashboards.panels import run
from agentdocket.dashboards.panels.common import HOURS
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-experiments"
TITLE = ("agentdocket: experiments", "Two sets of runs of a dataset, case by case")
RATE = "CAST(sum(rate_sum) / nullif(sum(rated), 0) AS double precision) AS rate"
# Both sides' rollup rows in one read of the view (its stale hours, computed live, once).
BOTH = (
    "FROM dashboard_experiment_stats WHERE dataset = '$experiment_dataset' "
    f"AND selection IN ('$baseline', '$candidate') AND {HOURS}"
)
SIDES = "(VALUES ('baseline', '$baseline'), ('candidate', '$candidate')) s(side, selection)"


def _cases() -> str:
    """Per selection, scorer and case, the mean verdict of the selection's runs (repeats
    averaged: pass as 1 or 0, else the score), from the hourly experiments rollup (an hour
    counts when it overlaps the time range)."""
    return f"SELECT selection, scorer, scorer_version, case_id, {RATE} {BOTH} GROUP BY 1, 2, 3, 4"


def _cases_with_failures() -> str:
    """:func:`_cases`, with each case's failure types (in the database's collation, as the
    row-level view sorts them) and its least run id. Summed per failure type first: a
    DISTINCT aggregate would sort every rollup row, where this sorts a few per case."""
    per_type = (
        "SELECT selection, scorer, scorer_version, case_id, failure_type, "
        f"sum(rate_sum) AS rate_sum, sum(rated) AS rated, min(first_run) AS first_run {BOTH} "
        "GROUP BY 1, 2, 3, 4, 5"
    )
    return (
        f"SELECT selection, scorer, scorer_version, case_id, {RATE}, "
        "string_agg(failure_type COLLATE \"default\", ', ' "
        'ORDER BY failure_type COLLATE "default") AS failures, min(first_run) AS trace_id '
        f"FROM ({per_type}) t GROUP BY 1, 2, 3, 4"
    )


PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Per scorer: baseline and candidate, with 95% intervals",
        "table",
        "SELECT scorer, scorer_version, side, count(*) AS cases, avg(rate) AS rate, "
        "avg(rate) - 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_low, "
        "avg(rate) + 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_high "
        f"FROM (SELECT s.side, k.scorer, k.scorer_version, k.rate FROM ({_cases()}) k "
        f"JOIN {SIDES} ON s.selection = k.selection) x "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "scorer scorer_version side cases rate ci_low ci_high",
        width=24,
        description="Pass rate (or mean score) of each side over its cases, repeats averaged, "
        "with a normal 95% interval. `agentdocket compare` gives the paired test.",
    ),
    panel(
        UID,
        "Cases that regressed and improved",
        "table",
        f"WITH cases AS ({_cases_with_failures()}) "
        "SELECT b.scorer, b.case_id, CASE WHEN c.rate < b.rate THEN 'regressed' ELSE 'improved' "
        "END AS change, b.rate AS baseline, c.rate AS candidate, b.failures AS baseline_failures, "
        "c.failures AS candidate_failures, b.trace_id AS baseline_run, c.trace_id AS candidate_run "
        "FROM cases b JOIN cases c "
        "ON c.scorer = b.scorer AND c.scorer_version = b.scorer_version AND c.case_id = b.case_id "
        "WHERE b.selection = '$baseline' AND c.selection = '$candidate' AND c.rate <> b.rate "
        "ORDER BY 3 DESC, 1, 2 LIMIT 500",
        "scorer case_id change baseline candidate baseline_failures candidate_failures "
        "baseline_run candidate_run",
        width=24,
        height=12,
        links={
            "baseline_run": run.RUN_LINK,
            "candidate_run": run.RUN_LINK,
            "case_id": run.runs_link("case_id"),
        },
    ),
)
