"""The dashboards' panels: each panel's SQL over the ``dashboard_*`` views (this package's
:mod:`~agentdocket.dashboards.views` and :mod:`~agentdocket.dashboards.rollups`) and the
columns it returns, and the template variables' queries. scripts/build_dashboards.py turns
them into Grafana JSON; the tests and bench/dashboards.py run every query. Scorer names are
checked against the registered scorers and measure names against the measures rollup.

The panels read the hourly ``dashboard_*_stats`` / ``_latency`` / ``_measures`` /
``_transitions`` views, whose cost grows with hours and dimensions, not with runs; only the
list of runs whose verdict changed reads row-level views.

Every panel filters on Grafana's time range and the ``agent`` and ``dataset`` variables, and
verdict panels on ``version`` too; the scorer-versions dashboard compares ``version_a`` with
``version_b`` of one ``scorer``.
"""

from __future__ import annotations

from agentdocket.dashboards import pipeline, run
from agentdocket.dashboards.declared import family, names, scorer
from agentdocket.dashboards.rollups import MEASURES
from agentdocket.dashboards.spec import PANELS as PANELS  # every dashboard's, re-exported
from agentdocket.dashboards.spec import panel
from agentdocket.dashboards.views import TOOL_SCORERS as TOOLS

# The filters every panel applies, on a view with time, agent and dataset columns. The
# dashboard_*_stats views are hourly: an hour counts when it overlaps the time range.
HOURS = "time > CAST($__timeFrom() AS timestamptz) - interval '1 hour' AND time <= $__timeTo()"
RUNS = HOURS + " AND agent IN ($agent) AND dataset IN ($dataset)"
VERDICTS = RUNS + " AND scorer_version IN ($version)"
TOOL_SCORERS = f"scorer IN {names(*TOOLS)}"
PEER = f"scorer LIKE {family('review.peer')}"
SUBTASK = "substr(scorer, length('review.peer.') + 1)"


def ratio(part: str, whole: str) -> str:
    """sum(part) / sum(whole), as a double (null when whole sums to 0)."""
    return f"CAST(sum({part}) AS double precision) / nullif(sum({whole}), 0)"


def total(column: str) -> str:
    return f"CAST(sum({column}) AS bigint)"


def quantiles(names: dict[str, float], *, time_group: bool = False) -> str:
    """Latency quantiles from dashboard_run_latency (per time group, or overall): in each group
    the first bucket whose running count reaches p of the total, interpolated log-linearly
    inside it. Bucket b holds [2^(b/8), 2^((b+1)/8)) ms."""
    key = "$__timeGroupAlias(time, $__interval), " if time_group else ""
    part = "PARTITION BY time" if time_group else ""
    found = ", ".join(
        f"power(2.0, min(bucket + ({p} * total - below) / n) "
        f"FILTER (WHERE below <= {p} * total AND below + n >= {p} * total) / 8.0) AS {name}"
        for name, p in names.items()
    )
    # Summed per hour first: Grafana's time grouping computes in numeric, slow on many rows.
    hourly = (
        "SELECT time, bucket, CAST(sum(runs) AS double precision) AS n "
        f"FROM dashboard_run_latency WHERE {RUNS} GROUP BY 1, 2"
    )
    group = "1, 2" if time_group else "1"
    buckets = f"SELECT {key}bucket, sum(n) AS n FROM ({hourly}) h GROUP BY {group}"
    running = (
        f"SELECT {'time, ' if time_group else ''}bucket, n, "
        f"sum(n) OVER (w ORDER BY bucket) - n AS below, sum(n) OVER w AS total "
        f"FROM ({buckets}) b WINDOW w AS ({part})"
    )
    sql = f"SELECT {'time, ' if time_group else ''}{found} FROM ({running}) c"
    return sql + (" GROUP BY time ORDER BY time" if time_group else "")


def measures(condition: str, wanted: str) -> str:
    """A filter on dashboard_verdict_measures: ``condition`` on the scorer, and the measures
    ``wanted``."""
    unknown = sorted(set(wanted.split()) - set(MEASURES))
    if unknown:
        raise KeyError(f"no measure named {', '.join(unknown)} in the measures rollup")
    quoted = ", ".join(f"'{n}'" for n in wanted.split())
    return f"{VERDICTS} AND {condition} AND measure IN ({quoted})"


def mean(measure: str) -> str:
    if measure not in MEASURES:
        raise KeyError(f"no measure named {measure} in the measures rollup")
    return (
        f"sum(total) FILTER (WHERE measure = '{measure}') / "
        f"nullif(sum(n) FILTER (WHERE measure = '{measure}'), 0)"
    )


def failing_runs(dashboard: str, which: str, condition: str) -> None:
    """The dashboard's table of recent failing runs of its scorers (``which`` names them in
    the title), each linking to its run."""
    panel(
        dashboard,
        f"Recent failing runs ({which})",
        "table",
        "SELECT time, trace_id, agent, case_id, question, scorer, failure_type, rationale "
        f"FROM dashboard_failing_runs WHERE $__timeFilter(time) AND agent IN ($agent) "
        f"AND dataset IN ($dataset) AND {condition} "
        "ORDER BY time DESC, trace_id, scorer, scorer_version LIMIT 50",
        "time trace_id agent case_id question scorer failure_type rationale",
        width=24,
        links={
            "trace_id": run.RUN_LINK,
            "case_id": run.runs_link("case_id"),
            "failure_type": run.runs_link("failure_type"),
        },
    )


# --- Overview ---------------------------------------------------------------------------------

OVERVIEW = "agentdocket-overview"
panel(
    OVERVIEW,
    "Runs",
    "stat",
    f"SELECT {total('runs')} AS runs FROM dashboard_run_stats WHERE {RUNS}",
    "runs",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Error rate",
    "stat",
    f"SELECT {ratio('errors', 'runs')} AS error_rate FROM dashboard_run_stats WHERE {RUNS}",
    "error_rate",
    unit="percentunit",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Median latency",
    "stat",
    quantiles({"p50_latency_ms": 0.5}),
    "p50_latency_ms",
    unit="ms",
    width=6,
    height=5,
    description="Estimated from latency buckets 9% wide (8 per doubling).",
)
panel(
    OVERVIEW,
    "Steps per run",
    "stat",
    f"SELECT {ratio('steps', 'runs')} AS steps_per_run FROM dashboard_run_stats WHERE {RUNS}",
    "steps_per_run",
    width=6,
    height=5,
)
panel(
    OVERVIEW,
    "Runs over time, by agent",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), agent AS metric, {total('runs')} AS runs "
    f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1, 2 ORDER BY 1",
    "time metric runs",
)
panel(
    OVERVIEW,
    "Error rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), {ratio('errors', 'runs')} AS error_rate "
    f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1 ORDER BY 1",
    "time error_rate",
    unit="percentunit",
)
panel(
    OVERVIEW,
    "Latency over time (p50, p95)",
    "timeseries",
    quantiles({"p50": 0.5, "p95": 0.95}, time_group=True),
    "time p50 p95",
    unit="ms",
    description="Estimated from latency buckets 9% wide (8 per doubling).",
)
panel(
    OVERVIEW,
    "Steps per run over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), {ratio('steps', 'runs')} AS steps, "
    f"{ratio('tool_calls', 'runs')} AS tool_calls, {ratio('llm_calls', 'runs')} AS llm_calls "
    f"FROM dashboard_run_stats WHERE {RUNS} GROUP BY 1 ORDER BY 1",
    "time steps tool_calls llm_calls",
)
panel(
    OVERVIEW,
    "By agent, version, strategy and model",
    "table",
    f"SELECT agent, agent_version, strategy, model, {total('runs')} AS runs, "
    f"{ratio('errors', 'runs')} AS error_rate, "
    f"sum(latency_ms) / nullif(sum(timed), 0) AS mean_latency_ms, "
    f"{ratio('steps', 'runs')} AS steps_per_run FROM dashboard_run_stats WHERE {RUNS} "
    f"GROUP BY 1, 2, 3, 4 ORDER BY runs DESC, 1, 2, 3, 4",
    "agent agent_version strategy model runs error_rate mean_latency_ms steps_per_run",
    width=24,
)

# The pipeline: records the database refused (migration 0006). Not by agent or dataset: a dead
# letter is a record that never became part of a run.
panel(
    OVERVIEW,
    "Dead letters (unresolved)",
    "stat",
    "SELECT count(*) FILTER (WHERE NOT resolved) AS unresolved FROM dashboard_dead_letters",
    "unresolved",
    width=6,
    description="Records the database refused, kept whole and not stored yet, at any time: "
    "`agentdocket dead-letters list` shows them, `retry` stores them once the cause is fixed.",
)
panel(
    OVERVIEW,
    "Dead letters over time, by source",
    "timeseries",
    "SELECT $__timeGroupAlias(time, $__interval), source AS metric, count(*) AS dead_letters "
    "FROM dashboard_dead_letters WHERE $__timeFilter(time) GROUP BY 1, 2 ORDER BY 1",
    "time metric dead_letters",
    width=18,
)

failing_runs(OVERVIEW, "every scorer", "true")

# --- Tool use ---------------------------------------------------------------------------------

T = "agentdocket-tool-use"
PLANNER = f"scorer = {scorer('planner.suffix_match')}"
panel(
    T,
    "Pass rate by scorer",
    "stat",
    f"SELECT scorer, {ratio('passed', 'decided')} AS pass_rate FROM dashboard_verdict_stats "
    f"WHERE {VERDICTS} AND {TOOL_SCORERS} GROUP BY 1 ORDER BY 1",
    "scorer pass_rate",
    unit="percentunit",
    width=24,
    height=5,
)
panel(
    T,
    "Pass rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), scorer AS metric, "
    f"{ratio('passed', 'decided')} AS pass_rate FROM dashboard_verdict_stats "
    f"WHERE {VERDICTS} AND {TOOL_SCORERS} GROUP BY 1, 2 ORDER BY 1",
    "time metric pass_rate",
    unit="percentunit",
    links={"*": run.FAILING},
)
panel(
    T,
    "Pass rate by tool",
    "table",
    f"SELECT label AS tool, scorer, {ratio('total', 'n')} AS pass_rate, {total('n')} AS runs "
    f"FROM dashboard_verdict_measures WHERE {measures(TOOL_SCORERS, 'tool')} "
    f"GROUP BY 1, 2 ORDER BY 1, 2",
    "tool scorer pass_rate runs",
    description="Each run counts once for every tool it called.",
    links={"tool": run.runs_link("tool"), "scorer": run.runs_link("failing_scorer")},
)
panel(
    T,
    "Top failure types",
    "table",
    f"SELECT failure_type, scorer, {total('verdicts')} AS verdicts FROM dashboard_verdict_stats "
    f"WHERE {VERDICTS} AND {TOOL_SCORERS} AND failure_type IS NOT NULL GROUP BY 1, 2 "
    f"ORDER BY verdicts DESC, 1, 2 LIMIT 20",
    "failure_type scorer verdicts",
    links={
        "failure_type": run.runs_link("failure_type"),
        "scorer": run.runs_link("failing_scorer"),
    },
)
panel(
    T,
    "Extra plan steps (passing plans)",
    "barchart",
    f"SELECT label AS extra_steps, {total('n')} AS runs FROM dashboard_verdict_measures "
    f"WHERE {measures(PLANNER, 'extra_steps')} "
    f"GROUP BY label ORDER BY min(total / n)",
    "extra_steps runs",
)

failing_runs(T, "tool use", f"{TOOL_SCORERS} AND scorer_version IN ($version)")

# --- Responses --------------------------------------------------------------------------------

R = "agentdocket-responses"
SIMILARITY = f"scorer = {scorer('response.similarity')}"
REFERENCE = f"scorer = {scorer('answer.reference')}"
panel(
    R,
    "Mean cosine and ROUGE-L",
    "stat",
    f"SELECT {mean('cosine')} AS cosine, {mean('rouge_l_precision')} AS rouge_l_precision, "
    f"{mean('rouge_l_recall')} AS rouge_l_recall, {mean('rouge_l_f')} AS rouge_l_f "
    f"FROM dashboard_verdict_measures "
    f"WHERE {measures(SIMILARITY, 'cosine rouge_l_precision rouge_l_recall rouge_l_f')}",
    "cosine rouge_l_precision rouge_l_recall rouge_l_f",
    width=24,
    height=5,
)
for measure, title in (("cosine", "Cosine similarity"), ("rouge_l_f", "ROUGE-L F")):
    panel(
        R,
        f"{title} distribution",
        "barchart",
        f"SELECT label AS {measure}, {total('n')} AS responses FROM dashboard_verdict_measures "
        f"WHERE {measures(SIMILARITY, measure + '_bucket')} GROUP BY label "
        f"ORDER BY CAST(label AS numeric)",
        f"{measure} responses",
        description="Buckets 0.05 wide, by their lower bound.",
    )
panel(
    R,
    "Reference match rate (conclusive)",
    "stat",
    f"SELECT {ratio('total', 'n')} AS match_rate, {total('n')} AS judged "
    f"FROM dashboard_verdict_measures WHERE {measures(REFERENCE, 'matched')}",
    "match_rate judged",
    unit="percentunit",
)
panel(
    R,
    "Interpretive scores (1-5)",
    "barchart",
    f"SELECT label AS score, {total('n')} AS answers FROM dashboard_verdict_measures "
    f"WHERE {measures(REFERENCE, 'interpretive_score')} GROUP BY label "
    f"ORDER BY CAST(label AS numeric)",
    "score answers",
)

failing_runs(
    R,
    "responses",
    f"scorer IN {names('response.similarity', 'answer.reference')} "
    "AND scorer_version IN ($version)",
)

# --- Peer review ------------------------------------------------------------------------------

P = "agentdocket-peer-review"
panel(
    P,
    "Perfect rate per sub-task",
    "barchart",
    f"SELECT {SUBTASK} AS subtask, {ratio('passed', 'decided')} AS perfect_rate, "
    f"{total('verdicts')} AS runs FROM dashboard_verdict_stats WHERE {VERDICTS} AND {PEER} "
    f"GROUP BY 1 ORDER BY 1",
    "subtask perfect_rate runs",
    unit="percentunit",
)
panel(
    P,
    "Agreement per sub-task: reviewers vs meta-reviewers",
    "table",
    f"SELECT {SUBTASK} AS subtask, {mean('reviewers_unanimous')} AS reviewers_agreement, "
    f"{mean('meta_reviewers_unanimous')} AS meta_reviewers_agreement, "
    f"CAST(sum(n) FILTER (WHERE measure = 'reviewers_unanimous') AS bigint) AS runs "
    f"FROM dashboard_verdict_measures "
    f"WHERE {measures(PEER, 'reviewers_unanimous meta_reviewers_unanimous')} "
    f"GROUP BY 1 ORDER BY 1",
    "subtask reviewers_agreement meta_reviewers_agreement runs",
)
panel(
    P,
    "Decisions by judge model",
    "table",
    f"SELECT label AS judge_model, replace(measure, '_decision', '') AS role, "
    f"{SUBTASK} AS subtask, {total('n')} AS decisions, {ratio('total', 'n')} AS perfect_share "
    f"FROM dashboard_verdict_measures "
    f"WHERE {measures(PEER, 'reviewer_decision meta_reviewer_decision')} "
    f"GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    "judge_model role subtask decisions perfect_share",
    width=24,
)
panel(
    P,
    "Perfect rate over time",
    "timeseries",
    f"SELECT $__timeGroupAlias(time, $__interval), {SUBTASK} AS metric, "
    f"{ratio('passed', 'decided')} AS perfect_rate FROM dashboard_verdict_stats "
    f"WHERE {VERDICTS} AND {PEER} GROUP BY 1, 2 ORDER BY 1",
    "time metric perfect_rate",
    unit="percentunit",
    width=24,
)

failing_runs(P, "peer review", f"{PEER} AND scorer_version IN ($version)")

# --- GRAMMAR ----------------------------------------------------------------------------------

G = "agentdocket-grammar"
GRAMMAR = f"scorer = {scorer('grammar.groups')}"
panel(
    G,
    "Group tags",
    "piechart",
    f"SELECT label AS tag, {total('n')} AS groups FROM dashboard_verdict_measures "
    f"WHERE {measures(GRAMMAR, 'tag')} GROUP BY 1 ORDER BY 1",
    "tag groups",
    width=8,
)
panel(
    G,
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
)
panel(
    G,
    "Blame split (incorrect runs of non-robust groups)",
    "piechart",
    f"SELECT label AS blame, {total('n')} AS runs FROM dashboard_verdict_measures "
    f"WHERE {measures(GRAMMAR, 'blame')} GROUP BY 1 ORDER BY 1",
    "blame runs",
    width=8,
)

failing_runs(G, "GRAMMAR", f"{GRAMMAR} AND scorer_version IN ($version)")

# --- Scorer versions --------------------------------------------------------------------------

V = "agentdocket-scorer-versions"
OUTCOME = (
    "coalesce({t}.label, CASE WHEN {t}.passed THEN 'pass' WHEN NOT {t}.passed THEN 'fail' "
    "ELSE 'scored' END)"
)
panel(
    V,
    "Per version: pass rate and mean score",
    "table",
    f"SELECT scorer_version, {total('verdicts')} AS runs, {ratio('passed', 'decided')} AS "
    f"pass_rate, {ratio('score_sum', 'scored')} AS mean_score FROM dashboard_verdict_stats "
    f"WHERE scorer = '$scorer' AND {RUNS} GROUP BY 1 ORDER BY 1",
    "scorer_version runs pass_rate mean_score",
    width=24,
)
panel(
    V,
    "How verdicts moved from version A to version B",
    "table",
    f"SELECT outcome_a AS version_a, outcome_b AS version_b, {total('runs')} AS runs "
    f"FROM dashboard_verdict_transitions WHERE scorer = '$scorer' "
    f"AND version_a = '$version_a' AND version_b = '$version_b' AND {RUNS} "
    f"GROUP BY 1, 2 ORDER BY runs DESC, 1, 2",
    "version_a version_b runs",
)
panel(
    V,
    "Runs whose verdict changed",
    "table",
    f"SELECT a.trace_id, a.case_id, {OUTCOME.format(t='a')} AS version_a, "
    f"{OUTCOME.format(t='b')} AS version_b, a.failure_type AS failure_a, "
    f"b.failure_type AS failure_b "
    "FROM dashboard_verdicts a JOIN dashboard_verdicts b "
    "ON b.trace_id = a.trace_id AND b.scorer = a.scorer "
    "WHERE a.scorer = '$scorer' AND a.scorer_version = '$version_a' "
    "AND b.scorer_version = '$version_b' AND $__timeFilter(a.time) "
    "AND a.agent IN ($agent) AND a.dataset IN ($dataset) "
    f"AND (a.passed IS DISTINCT FROM b.passed OR a.label IS DISTINCT FROM b.label "
    f"OR a.score IS DISTINCT FROM b.score) ORDER BY a.time DESC, a.trace_id LIMIT 200",
    "trace_id case_id version_a version_b failure_a failure_b",
    links={"trace_id": run.RUN_LINK, "case_id": run.runs_link("case_id")},
)


failing_runs(
    V,
    "the scorer's two versions",
    "scorer = '$scorer' AND scorer_version IN ('$version_a', '$version_b')",
)

# --- Experiments ------------------------------------------------------------------------------

E = "agentdocket-experiments"


def _side(name: str, extra: str = "") -> str:
    """Per scorer and case, the mean verdict of the runs ``$name`` selects (repeats averaged:
    pass as 1 or 0, else the score)."""
    return (
        f"SELECT scorer, scorer_version, case_id, avg(coalesce(pass, score)) AS rate{extra} "
        "FROM dashboard_experiment_verdicts WHERE dataset = '$experiment_dataset' "
        f"AND selection = '${name}' AND $__timeFilter(time) GROUP BY 1, 2, 3"
    )


panel(
    E,
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
)
FAILURES = ", string_agg(DISTINCT failure_type, ', ') AS failures, min(trace_id) AS trace_id"
panel(
    E,
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
    E: ("agentdocket: experiments", "Two sets of runs of a dataset, case by case"),
    pipeline.UID: pipeline.TITLE,
    run.UID: run.TITLE,
}


VARIABLE_SQL = {
    "agent": f"SELECT DISTINCT agent FROM dashboard_run_stats WHERE {HOURS}",
    "dataset": f"SELECT DISTINCT dataset FROM dashboard_run_stats WHERE {HOURS}",
    "version": "SELECT DISTINCT scorer_version FROM dashboard_scorer_versions",
    "scorer": "SELECT DISTINCT scorer FROM dashboard_scorer_versions",
    "version_a": "SELECT scorer_version FROM dashboard_scorer_versions WHERE scorer = '$scorer'",
    "version_b": "SELECT scorer_version FROM dashboard_scorer_versions WHERE scorer = '$scorer'",
    "experiment_dataset": "SELECT DISTINCT dataset FROM dashboard_experiment_verdicts",
    "baseline": "SELECT DISTINCT selection FROM dashboard_experiment_verdicts "
    "WHERE dataset = '$experiment_dataset'",
    "candidate": "SELECT DISTINCT selection FROM dashboard_experiment_verdicts "
    "WHERE dataset = '$experiment_dataset'",
}
