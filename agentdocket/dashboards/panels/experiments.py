"""The experiments dashboard: two sets of runs of one dataset (``baseline`` and ``candidate``,
as ``agentdocket compare`` selects them), scorer by scorer and case by case."""

from __future__ import annotations

from agentdocket.dashboards.panels import run
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-experiments"
TITLE = ("agentdocket: experiments", "Two sets of runs of a dataset, case by case")
FAILURES = ", string_agg(DISTINCT failure_type, ', ') AS failures, min(trace_id) AS trace_id"


def _side(name: str, extra: str = "") -> str:
    """Per scorer and case, the mean verdict of the runs ``$name`` selects (repeats averaged:
    pass as 1 or 0, else the score)."""
    return (
        f"SELECT scorer, scorer_version, case_id, avg(coalesce(pass, score)) AS rate{extra} "
        "FROM dashboard_experiment_verdicts WHERE dataset = '$experiment_dataset' "
        f"AND selection = '${name}' AND $__timeFilter(time) GROUP BY 1, 2, 3"
    )


PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Per scorer: baseline and candidate, with 95% intervals",
        "table",
        "SELECT scorer, scorer_version, side, count(*) AS cases, avg(rate) AS rate, "
        "avg(rate) - 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_low, "
        "avg(rate) + 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_high "
        f"FROM (SELECT 'baseline' AS side, b.* FROM ({_side('baseline')}) b UNION ALL "
        f"SELECT 'candidate', c.* FROM ({_side('candidate')}) c) s "
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
        "SELECT b.scorer, b.case_id, CASE WHEN c.rate < b.rate THEN 'regressed' ELSE 'improved' "
        "END AS change, b.rate AS baseline, c.rate AS candidate, b.failures AS baseline_failures, "
        "c.failures AS candidate_failures, b.trace_id AS baseline_run, c.trace_id AS candidate_run "
        f"FROM ({_side('baseline', FAILURES)}) b JOIN ({_side('candidate', FAILURES)}) c "
        "ON c.scorer = b.scorer AND c.scorer_version = b.scorer_version AND c.case_id = b.case_id "
        "WHERE c.rate <> b.rate ORDER BY 3 DESC, 1, 2 LIMIT 500",
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
