"""The scorer-versions dashboard: how the verdicts of one ``scorer`` moved from ``version_a``
to ``version_b``, and the runs whose verdict changed."""

from __future__ import annotations

from agentdocket.dashboards.macros import variable
from agentdocket.dashboards.panels import run
from agentdocket.dashboards.panels.common import RUNS, failing_runs, ratio, total
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-scorer-versions"
TITLE = ("agentdocket: scorer versions", "How verdicts moved between two versions of a scorer")
OUTCOME = (
    "coalesce({t}.label, CASE WHEN {t}.passed THEN 'pass' WHEN NOT {t}.passed THEN 'fail' "
    "ELSE 'scored' END)"
)
SCORER, VERSION_A, VERSION_B = variable("scorer"), variable("version_a"), variable("version_b")

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Per version: pass rate and mean score",
        "table",
        f"SELECT scorer_version, {total('verdicts')} AS runs, {ratio('passed', 'decided')} AS "
        f"pass_rate, {ratio('score_sum', 'scored')} AS mean_score FROM dashboard_verdict_stats "
        f"WHERE scorer = {SCORER} AND {RUNS} GROUP BY 1 ORDER BY 1",
        "scorer_version runs pass_rate mean_score",
        width=24,
    ),
    panel(
        UID,
        "How verdicts moved from version A to version B",
        "table",
        f"SELECT outcome_a AS version_a, outcome_b AS version_b, {total('runs')} AS runs "
        f"FROM dashboard_verdict_transitions WHERE scorer = {SCORER} "
        f"AND version_a = {VERSION_A} AND version_b = {VERSION_B} AND {RUNS} "
        f"GROUP BY 1, 2 ORDER BY runs DESC, 1, 2",
        "version_a version_b runs",
    ),
    panel(
        UID,
        "Runs whose verdict changed",
        "table",
        f"SELECT a.trace_id, a.case_id, {OUTCOME.format(t='a')} AS version_a, "
        f"{OUTCOME.format(t='b')} AS version_b, a.failure_type AS failure_a, "
        f"b.failure_type AS failure_b "
        "FROM dashboard_verdicts a JOIN dashboard_verdicts b "
        "ON b.trace_id = a.trace_id AND b.scorer = a.scorer "
        f"WHERE a.scorer = {SCORER} AND a.scorer_version = {VERSION_A} "
        f"AND b.scorer_version = {VERSION_B} AND $__timeFilter(a.time) "
        f"AND a.agent IN ({variable('agent')}) AND a.dataset IN ({variable('dataset')}) "
        f"AND (a.passed IS DISTINCT FROM b.passed OR a.label IS DISTINCT FROM b.label "
        f"OR a.score IS DISTINCT FROM b.score) ORDER BY a.time DESC, a.trace_id LIMIT 200",
        "trace_id case_id version_a version_b failure_a failure_b",
        links={"trace_id": run.RUN_LINK, "case_id": run.runs_link("case_id")},
    ),
    failing_runs(
        UID,
        "the scorer's two versions",
        f"scorer = {SCORER} AND scorer_version IN ({VERSION_A}, {VERSION_B})",
    ),
)
