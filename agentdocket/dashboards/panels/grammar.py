"""The GRAMMAR dashboard: semantic groups by tag, accuracy against refined accuracy, and
the blame split of incorrect runs."""

from __future__ import annotations

from agentdocket.dashboards.declared import scorer
from agentdocket.dashboards.panels.common import VERSION_IN, failing_runs, mean, measures, total
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-grammar"
TITLE = ("agentdocket: GRAMMAR", "Semantic groups, refined accuracy and context comparison")
GRAMMAR = f"scorer = {scorer('grammar.groups')}"

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Group tags",
        "piechart",
        f"SELECT label AS tag, {total('n')} AS groups FROM dashboard_verdict_measures "
        f"WHERE {measures(GRAMMAR, 'tag')} GROUP BY 1 ORDER BY 1",
        "tag groups",
        width=8,
    ),
    panel(
        UID,
        "Accuracy vs refined accuracy",
        "table",
        f"SELECT dataset, {mean('correct')} AS accuracy, {mean('refined_correct')} AS "
        f"refined_accuracy, {mean('retrieval_correct')} AS retrieval_accuracy, "
        f"{mean('knowledge')} AS knowledge_accuracy, "
        f"CAST(sum(n) FILTER (WHERE measure = 'correct') AS bigint) AS runs "
        f"FROM dashboard_verdict_measures "
        f"WHERE {measures(GRAMMAR, 'correct refined_correct retrieval_correct knowledge')} "
        f"GROUP BY 1 ORDER BY 1",
        "dataset accuracy refined_accuracy retrieval_accuracy knowledge_accuracy runs",
        width=16,
    ),
    panel(
        UID,
        "Blame split (incorrect runs of non-robust groups)",
        "piechart",
        f"SELECT label AS blame, {total('n')} AS runs FROM dashboard_verdict_measures "
        f"WHERE {measures(GRAMMAR, 'blame')} GROUP BY 1 ORDER BY 1",
        "blame runs",
        width=8,
    ),
    failing_runs(UID, "GRAMMAR", f"{GRAMMAR} AND {VERSION_IN}"),
)
