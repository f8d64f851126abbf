"""The people dashboard: labels given, by rubric and way in, and how far annotators agree
over time (Fleiss' kappa of each week's items), from ``dashboard_labels``.

The agreement panel computes Fleiss' kappa in SQL exactly as
:func:`agentdocket.people.agreement.fleiss_kappa` does (a test holds them equal): per rubric,
the items whose first label falls in the week and that have two or more whole-run labels;
each item's agreement P_i with its own number of labels, P their mean, P_e the sum of the
squared shares of each answer over all those labels.
"""

from __future__ import annotations

from agentdocket.dashboards.panels import run
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-people"
TITLE = ("agentdocket: people", "Labels from people, and how far annotators agree")
# Labels are few beside the log and read from it alone: by time, not by agent or dataset.
LABELS = "$__timeFilter(time)"
# Each (rubric, run, answer) with its count n_ij, the run's number of labels n and the week
# of its first label; runs with two or more labels only. (Subqueries, not WITH: the panels
# read nothing but the dashboard_* views.)
CELLS = (
    "SELECT * FROM (SELECT rubric, trace_id, value, count(*) AS n_ij, "
    "sum(count(*)) OVER (PARTITION BY rubric, trace_id) AS n, "
    "date_trunc('week', min(min(time)) OVER (PARTITION BY rubric, trace_id)) AS week "
    f"FROM dashboard_labels WHERE {LABELS} AND span_id IS NULL "
    "GROUP BY rubric, trace_id, value) c WHERE n >= 2"
)
# One pass over the cells: per (week, rubric) the share of each answer (P_e is the sum of
# their squares) and P, the mean of the items' P_i: the sum over cells of
# n_ij (n_ij - 1) / (n (n - 1)) over the number of items, which is the sum of n_ij / n.
WEEKLY_KAPPA = f"""
SELECT week AS time, rubric AS metric,
    CASE WHEN pe < 1 THEN (pbar - pe) / (1 - pe) END AS kappa
FROM (
    SELECT week, rubric, max(pbar) AS pbar, sum(share * share) AS pe FROM (
        SELECT week, rubric, value,
            CAST(sum(n_ij) AS double precision) / sum(sum(n_ij)) OVER w AS share,
            sum(sum(CAST(n_ij * (n_ij - 1) AS double precision) / (n * (n - 1)))) OVER w
                / sum(sum(CAST(n_ij AS double precision) / n)) OVER w AS pbar
        FROM ({CELLS}) c GROUP BY week, rubric, value
        WINDOW w AS (PARTITION BY week, rubric)
    ) s GROUP BY week, rubric
) k ORDER BY 1, 2
"""

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Labels given",
        "timeseries",
        "SELECT $__timeGroupAlias(time, $__interval), rubric || ' (' || source || ')' AS metric, "
        f"count(*) AS labels FROM dashboard_labels WHERE {LABELS} GROUP BY 1, 2 ORDER BY 1",
        "time metric labels",
        description="Each author's latest label per run and rubric, by the way it came in "
        "(api: POST /v1/feedback, queue: the annotation page, cli, tracer).",
    ),
    panel(
        UID,
        "Annotator agreement (Fleiss' kappa by week)",
        "timeseries",
        WEEKLY_KAPPA,
        "time metric kappa",
        description="Per rubric, the agreement beyond chance of the annotators of each week's "
        "runs (runs with two or more labels). 1: full agreement, 0: chance. `agentdocket "
        "agreement --queue Q` gives it per queue with intervals.",
    ),
    panel(
        UID,
        "Thumbs-down from users",
        "table",
        "SELECT time, trace_id, author, rubric, value FROM dashboard_labels "
        f"WHERE {LABELS} AND source IN ('api', 'tracer') AND value = 'false' "
        "ORDER BY time DESC, trace_id LIMIT 50",
        "time trace_id author rubric value",
        width=24,
        links={"trace_id": run.RUN_LINK},
        description="The latest failing labels an application sent (POST /v1/feedback, "
        "run.feedback).",
    ),
)
