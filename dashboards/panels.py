"""The dashboards' panels: each panel's SQL over the ``dashboard_*`` views (migration 0004)
and the columns it returns, and the template variables' queries. dashboards/build.py turns
them into Grafana JSON; the tests and bench/dashboards.py run every query.

Every panel filters on Grafana's time range and the ``agent`` and ``dataset`` variables, and
verdict panels on ``version`` too; the scorer-versions dashboard compares ``version_a`` with
``version_b`` of one ``scorer``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The filters every panel applies (on a view with time, agent, dataset columns).
RUNS = "$__timeFilter(time) AND agent IN ($agent) AND dataset IN ($dataset)"
VERDICTS = RUNS + " AND scorer_version IN ($version)"


@dataclass(frozen=True)
class PanelSpec:
    """One panel: where it is, its SQL and the columns that SQL returns."""

    dashboard: str
    title: str
    kind: str  # timeseries, stat, table, barchart, piechart
    sql: str
    columns: tuple[str, ...]
    fmt: str = "table"
    unit: str | None = None
    description: str = ""
    width: int = 12
    height: int = 8
    options: dict[str, Any] = field(default_factory=dict)


PANELS: list[PanelSpec] = []


def panel(dashboard: str, title: str, kind: str, sql: str, columns: str, **kw: Any) -> None:
    fmt = "time_series" if kind == "timeseries" else "table"
    spec = PanelSpec(
        dashboard, title, kind, " ".join(sql.split()), tuple(columns.split()), fmt, **kw
    )
    PANELS.append(spec)


def bucket(column: str, width: float) -> str:
    return f"round(CAST(floor({column} / {width}) * {width} AS numeric), 2)"


# --- Overview ---------------------------------------------------------------------------------

OVERVIEW = "agentdocket-overview"
panel(
    OVERVIEW,
    "Runs",
    "stat",
    f"SELECT count(*) AS runs FROM dashboard_runs WHERE {RUNS}",
    "runs",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Error rate",
    "stat",
    f"SELECT avg(is_error) AS error_rate FROM dashboard_runs WHERE {RUNS}",
    "error_rate",
    unit="percentunit",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Median latency",
    "stat",
    f"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50_latency_ms "
    f"FROM dashboard_runs WHERE {RUNS}",
    "p50_latency_ms",
    unit="ms",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Steps per run",
    "stat",
    f"SELECT avg(n_steps) AS steps_per_run FROM dashboard_runs WHERE {RUNS}",
    "steps_per_run",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Runs over time, by agent",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), agent AS metric, count(*) AS runs "
    f"FROM dashboard_runs WHERE {RUNS} GROUP BY 1, 2 ORDER BY 1",
    "time metric runs",
)
panel(
    OVERVIEW,
    "Error rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), avg(is_error) AS error_rate "
    f"FROM dashboard_runs WHERE {RUNS} GROUP BY 1 ORDER BY 1",
    "time error_rate",
    unit="percentunit",
)
panel(
    OVERVIEW,
    "Latency over time (p50, p95)",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), "
    f"percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50, "
    f"percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95 "
    f"FROM dashboard_runs WHERE {RUNS} GROUP BY 1 ORDER BY 1",
    "time p50 p95",
    unit="ms",
)
panel(
    OVERVIEW,
    "Steps per run over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), avg(n_steps) AS steps, "
    f"avg(n_tool_calls) AS tool_calls, avg(n_llm_calls) AS llm_calls "
    f"FROM dashboard_runs WHERE {RUNS} GROUP BY 1 ORDER BY 1",
    "time steps tool_calls llm_calls",
)
panel(
    OVERVIEW,
    "By agent, version, strategy and model",
    "table",
    f"SELECT agent, agent_version, strategy, model, count(*) AS runs, "
    f"avg(is_error) AS error_rate, "
    f"percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50_latency_ms, "
    f"avg(n_steps) AS steps_per_run FROM dashboard_runs WHERE {RUNS} "
    f"GROUP BY 1, 2, 3, 4 ORDER BY runs DESC",
    "agent agent_version strategy model runs error_rate p50_latency_ms steps_per_run",
    width=24,
)

# --- Tool use ---------------------------------------------------------------------------------

T = "agentdocket-tool-use"
panel(
    T,
    "Pass rate by scorer",
    "stat",
    f"SELECT scorer, avg(pass) AS pass_rate FROM dashboard_tool_use WHERE {VERDICTS} "
    f"GROUP BY 1 ORDER BY 1",
    "scorer pass_rate",
    unit="percentunit",
    width=24,
    height=5,
)
panel(
    T,
    "Pass rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), scorer AS metric, avg(pass) AS pass_rate "
    f"FROM dashboard_tool_use WHERE {VERDICTS} GROUP BY 1, 2 ORDER BY 1",
    "time metric pass_rate",
    unit="percentunit",
)
panel(
    T,
    "Pass rate by tool",
    "table",
    "SELECT t.tool, u.scorer, avg(u.pass) AS pass_rate, count(*) AS runs "
    "FROM dashboard_tool_use u JOIN dashboard_run_tools t ON t.trace_id = u.trace_id "
    "WHERE $__timeFilter(u.time) AND u.agent IN ($agent) AND u.dataset IN ($dataset) "
    "AND u.scorer_version IN ($version) "
    "GROUP BY 1, 2 ORDER BY 1, 2",
    "tool scorer pass_rate runs",
)
panel(
    T,
    "Top failure types",
    "table",
    f"SELECT failure_type, scorer, count(*) AS verdicts FROM dashboard_tool_use "
    f"WHERE {VERDICTS} AND failure_type IS NOT NULL GROUP BY 1, 2 "
    f"ORDER BY verdicts DESC LIMIT 20",
    "failure_type scorer verdicts",
)
panel(
    T,
    "Extra plan steps (passing plans)",
    "barchart",
    f"SELECT CAST(extra_steps AS text) AS extra_steps, count(*) AS runs "
    f"FROM dashboard_tool_use WHERE {VERDICTS} AND scorer = 'planner.suffix_match' "
    f"AND extra_steps IS NOT NULL GROUP BY extra_steps ORDER BY extra_steps",
    "extra_steps runs",
)

# --- Responses --------------------------------------------------------------------------------

R = "agentdocket-responses"
panel(
    R,
    "Mean cosine and ROUGE-L",
    "stat",
    f"SELECT avg(cosine) AS cosine, avg(rouge_l_precision) AS rouge_l_precision, "
    f"avg(rouge_l_recall) AS rouge_l_recall, avg(rouge_l_f) AS rouge_l_f "
    f"FROM dashboard_similarity WHERE {VERDICTS}",
    "cosine rouge_l_precision rouge_l_recall rouge_l_f",
    width=24,
    height=5,
)
panel(
    R,
    "Cosine similarity distribution",
    "barchart",
    f"SELECT CAST({bucket('cosine', 0.05)} AS text) AS cosine, count(*) AS responses "
    f"FROM dashboard_similarity WHERE {VERDICTS} AND cosine IS NOT NULL "
    f"GROUP BY {bucket('cosine', 0.05)} ORDER BY {bucket('cosine', 0.05)}",
    "cosine responses",
)
panel(
    R,
    "ROUGE-L F distribution",
    "barchart",
    f"SELECT CAST({bucket('rouge_l_f', 0.05)} AS text) AS rouge_l_f, count(*) AS responses "
    f"FROM dashboard_similarity WHERE {VERDICTS} AND rouge_l_f IS NOT NULL "
    f"GROUP BY {bucket('rouge_l_f', 0.05)} ORDER BY {bucket('rouge_l_f', 0.05)}",
    "rouge_l_f responses",
)
panel(
    R,
    "Reference match rate (conclusive)",
    "stat",
    f"SELECT avg(matched) AS match_rate, count(matched) AS judged FROM dashboard_reference "
    f"WHERE {VERDICTS} AND matched IS NOT NULL",
    "match_rate judged",
    unit="percentunit",
)
panel(
    R,
    "Interpretive scores (1-5)",
    "barchart",
    f"SELECT CAST(interpretive_score AS text) AS score, count(*) AS answers "
    f"FROM dashboard_reference WHERE {VERDICTS} AND interpretive_score IS NOT NULL "
    f"GROUP BY interpretive_score ORDER BY interpretive_score",
    "score answers",
)

# --- Peer review ------------------------------------------------------------------------------

P = "agentdocket-peer-review"
panel(
    P,
    "Perfect rate per sub-task",
    "barchart",
    f"SELECT subtask, avg(pass) AS perfect_rate, count(*) AS runs FROM dashboard_peer_review "
    f"WHERE {VERDICTS} GROUP BY 1 ORDER BY 1",
    "subtask perfect_rate runs",
    unit="percentunit",
)
panel(
    P,
    "Agreement per sub-task: reviewers vs meta-reviewers",
    "table",
    f"SELECT subtask, avg(reviewers_unanimous) AS reviewers_agreement, "
    f"avg(meta_reviewers_unanimous) AS meta_reviewers_agreement, count(*) AS runs "
    f"FROM dashboard_peer_review WHERE {VERDICTS} GROUP BY 1 ORDER BY 1",
    "subtask reviewers_agreement meta_reviewers_agreement runs",
)
panel(
    P,
    "Decisions by judge model",
    "table",
    f"SELECT judge_model, role, subtask, count(*) AS decisions, "
    f"avg(CASE WHEN decision = 'Perfect' THEN 1.0 ELSE 0.0 END) AS perfect_share "
    f"FROM dashboard_peer_decisions WHERE {VERDICTS} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    "judge_model role subtask decisions perfect_share",
    width=24,
)
panel(
    P,
    "Perfect rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), subtask AS metric, avg(pass) AS perfect_rate "
    f"FROM dashboard_peer_review WHERE {VERDICTS} GROUP BY 1, 2 ORDER BY 1",
    "time metric perfect_rate",
    unit="percentunit",
    width=24,
)

# --- GRAMMAR ----------------------------------------------------------------------------------

G = "agentdocket-grammar"
panel(
    G,
    "Group tags",
    "piechart",
    f"SELECT tag, count(*) AS groups FROM dashboard_grammar WHERE {VERDICTS} "
    f"AND representative = 1 GROUP BY 1 ORDER BY 1",
    "tag groups",
    width=8,
)
panel(
    G,
    "Accuracy vs refined accuracy",
    "table",
    f"SELECT dataset, avg(correct) AS accuracy, avg(refined_correct) AS refined_accuracy, "
    f"avg(retrieval_correct) AS retrieval_accuracy, "
    f"CAST(sum(CASE WHEN representative = 1 AND tag <> 'Gap' THEN 1 ELSE 0 END) "
    f"AS double precision) / nullif(sum(representative), 0) AS knowledge_accuracy, "
    f"count(*) AS runs FROM dashboard_grammar WHERE {VERDICTS} GROUP BY 1 ORDER BY 1",
    "dataset accuracy refined_accuracy retrieval_accuracy knowledge_accuracy runs",
    width=16,
)
panel(
    G,
    "Blame split (incorrect runs of non-robust groups)",
    "piechart",
    f"SELECT blame, count(*) AS runs FROM dashboard_grammar WHERE {VERDICTS} "
    f"AND blame IS NOT NULL GROUP BY 1 ORDER BY 1",
    "blame runs",
    width=8,
)

# --- Scorer versions --------------------------------------------------------------------------

V = "agentdocket-scorer-versions"
A_B = (
    "FROM dashboard_verdicts a JOIN dashboard_verdicts b "
    "ON b.trace_id = a.trace_id AND b.scorer = a.scorer "
    "WHERE a.scorer = '$scorer' AND a.scorer_version = '$version_a' "
    "AND b.scorer_version = '$version_b' AND $__timeFilter(a.time) "
    "AND a.agent IN ($agent) AND a.dataset IN ($dataset)"
)
OUTCOME = (
    "coalesce({t}.label, CASE WHEN {t}.passed THEN 'pass' WHEN NOT {t}.passed THEN 'fail' "
    "ELSE 'scored' END)"
)
panel(
    V,
    "Per version: pass rate and mean score",
    "table",
    f"SELECT scorer_version, count(*) AS runs, avg(pass) AS pass_rate, avg(score) AS mean_score "
    f"FROM dashboard_verdicts WHERE scorer = '$scorer' AND {RUNS} GROUP BY 1 ORDER BY 1",
    "scorer_version runs pass_rate mean_score",
    width=24,
)
panel(
    V,
    "How verdicts moved from version A to version B",
    "table",
    f"SELECT {OUTCOME.format(t='a')} AS version_a, {OUTCOME.format(t='b')} AS version_b, "
    f"count(*) AS runs {A_B} GROUP BY 1, 2 ORDER BY runs DESC",
    "version_a version_b runs",
)
panel(
    V,
    "Runs whose verdict changed",
    "table",
    f"SELECT a.trace_id, a.case_id, {OUTCOME.format(t='a')} AS version_a, "
    f"{OUTCOME.format(t='b')} AS version_b, a.failure_type AS failure_a, "
    f"b.failure_type AS failure_b {A_B} "
    f"AND (a.passed IS DISTINCT FROM b.passed OR a.label IS DISTINCT FROM b.label "
    f"OR a.score IS DISTINCT FROM b.score) ORDER BY a.time DESC LIMIT 200",
    "trace_id case_id version_a version_b failure_a failure_b",
)


TITLES = {
    OVERVIEW: (
        "agentdocket: overview",
        "Runs, errors, latency and steps by agent, version, strategy, model",
    ),
    T: ("agentdocket: tool use", "Planner suffix match, slot filling, procedural accuracy"),
    R: ("agentdocket: responses", "Response similarity and reference-based judge verdicts"),
    P: ("agentdocket: peer review", "Reviewers and meta-reviewers per sub-task and judge model"),
    G: ("agentdocket: GRAMMAR", "Semantic groups, refined accuracy and context comparison"),
    V: ("agentdocket: scorer versions", "How verdicts moved between two versions of a scorer"),
}


VARIABLE_SQL = {
    "agent": "SELECT DISTINCT agent FROM dashboard_runs WHERE $__timeFilter(time)",
    "dataset": "SELECT DISTINCT dataset FROM dashboard_runs WHERE $__timeFilter(time)",
    "version": "SELECT DISTINCT scorer_version FROM dashboard_scorer_versions",
    "scorer": "SELECT DISTINCT scorer FROM dashboard_scorer_versions",
    "version_a": "SELECT scorer_version FROM dashboard_scorer_versions WHERE scorer = '$scorer'",
    "version_b": "SELECT scorer_version FROM dashboard_scorer_versions WHERE scorer = '$scorer'",
}
