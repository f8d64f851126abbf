"""The peer-review dashboard: reviewers and meta-reviewers per sub-task and judge model."""

from __future__ import annotations

from agentdocket.dashboards.panels.common import (
    PEER,
    SUBTASK,
    VERDICTS,
    VERSION_IN,
    failing_runs,
    mean,
    measures,
    ratio,
    total,
)
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-peer-review"
TITLE = ("agentdocket: peer review", "Reviewers and meta-reviewers per sub-task and judge model")


PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Perfect rate per sub-task",
        "barchart",
        f"SELECT {SUBTASK} AS subtask, {ratio('passed', 'decided')} AS perfect_rate, "
        f"{total('verdicts')} AS runs FROM dashboard_verdict_stats WHERE {VERDICTS} AND {PEER} "
        f"GROUP BY 1 ORDER BY 1",
        "subtask perfect_rate runs",
        unit="percentunit",
    ),
    panel(
        UID,
        "Agreement per sub-task: reviewers vs meta-reviewers",
        "table",
        f"SELECT {SUBTASK} AS subtask, {mean('reviewers_unanimous')} AS reviewers_agreement, "
        f"{mean('meta_reviewers_unanimous')} AS meta_reviewers_agreement, "
        f"CAST(sum(n) FILTER (WHERE measure = 'reviewers_unanimous') AS bigint) AS runs "
        f"FROM dashboard_verdict_measures "
        f"WHERE {measures(PEER, 'reviewers_unanimous meta_reviewers_unanimous')} "
        f"GROUP BY 1 ORDER BY 1",
        "subtask reviewers_agreement meta_reviewers_agreement runs",
    ),
    panel(
        UID,
        "Decisions by judge model",
        "table",
        f"SELECT label AS judge_model, replace(measure, '_decision', '') AS role, "
        f"{SUBTASK} AS subtask, {total('n')} AS decisions, {ratio('total', 'n')} AS perfect_share "
        f"FROM dashboard_verdict_measures "
        f"WHERE {measures(PEER, 'reviewer_decision meta_reviewer_decision')} "
        f"GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "judge_model role subtask decisions perfect_share",
        width=24,
    ),
    panel(
        UID,
        "Perfect rate over time",
        "timeseries",
        f"SELECT $__timeGroupAlias(time, $__interval), {SUBTASK} AS metric, "
        f"{ratio('passed', 'decided')} AS perfect_rate FROM dashboard_verdict_stats "
        f"WHERE {VERDICTS} AND {PEER} GROUP BY 1, 2 ORDER BY 1, 2",
        "time metric perfect_rate",
        unit="percentunit",
        width=24,
    ),
    failing_runs(UID, "peer review", f"{PEER} AND {VERSION_IN}"),
)
