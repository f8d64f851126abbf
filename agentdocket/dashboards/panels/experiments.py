"""The experiments dashboard: two sets of runs of one dataset (``baseline`` and ``candidate``,
as ``agentdocket compare`` selects them), scorer by scorer and case by case."""

from __future__ import annotations

from agentdocket.dashboards.macros import variable
from agentdocket.dashboards.panels import run
from agentdocket.dashboards.panels.common import HOURS
from agentdocket.dashboards.spec import PanelSpec, panel

UID = "agentdocket-experiments"
TITLE = ("agentdocket: experiments", "Two sets of runs of a dataset, case by case")
DATASET = variable("experiment_dataset")
BASELINE, CANDIDATE = variable("baseline"), variable("candidate")
# A case's rate over its runs (repeats averaged): a pass/fail scorer's passes over every judged
# run, a run missing its outcome failing (as `agentdocket compare` counts it); a score
# scorer's mean score over the runs that have one.
RATE = (
    "CASE WHEN sum(decided) > 0 THEN CAST(sum(passes) AS double precision) / "
    "(sum(decided) + sum(missing)) "
    "ELSE CAST(sum(rate_sum) / nullif(sum(rated), 0) AS double precision) END AS rate"
)
# What else a case's runs say: how many miss an outcome, how many were judged (pass, fail or
# missing) and passed; a case whose runs did not all agree is flaky.
COUNTS = (
    "sum(missing) AS missing, sum(verdicts) AS runs, sum(passes) AS passes, "
    "sum(decided) + sum(missing) AS judged"
)
# Both sides' rollup rows in one read of the view (its stale hours, computed live, once).
BOTH = (
    f"FROM dashboard_experiment_stats WHERE dataset = {DATASET} "
    f"AND selection IN ({BASELINE}, {CANDIDATE}) AND {HOURS}"
)
SIDES = f"(VALUES ('baseline', {BASELINE}), ('candidate', {CANDIDATE})) s(side, selection)"


def _cases() -> str:
    """Per selection, scorer and case, the rate of the selection's runs (repeats averaged:
    see :data:`RATE`) and their counts, from the hourly experiments rollup (an hour counts
    when it overlaps the time range)."""
    return (
        f"SELECT selection, scorer, scorer_version, case_id, {RATE}, {COUNTS} {BOTH} "
        "GROUP BY 1, 2, 3, 4"
    )


def _cases_with_failures() -> str:
    """:func:`_cases`, with each case's failure types (in the database's collation, as the
    row-level view sorts them) and its least run id. Summed per failure type first: a
    DISTINCT aggregate would sort every rollup row, where this sorts a few per case."""
    sums = (
        "sum(rate_sum) AS rate_sum, sum(rated) AS rated, sum(missing) AS missing, "
        "sum(decided) AS decided, sum(passes) AS passes, sum(verdicts) AS verdicts"
    )
    per_type = (
        "SELECT selection, scorer, scorer_version, case_id, failure_type, "
        f"{sums}, min(first_run) AS first_run {BOTH} GROUP BY 1, 2, 3, 4, 5"
    )
    return (
        f"SELECT selection, scorer, scorer_version, case_id, {RATE}, {COUNTS}, "
        "string_agg(failure_type COLLATE \"default\", ', ' "
        'ORDER BY failure_type COLLATE "default") AS failures, min(first_run) AS trace_id '
        f"FROM ({per_type}) t GROUP BY 1, 2, 3, 4"
    )


# A case the baseline answered in some run and the candidate in none lost its answer.
LOST_PAIRED = "(c_missing = c_runs AND b_missing < b_runs)"


def _side(column: str, side: str, alias: str) -> str:
    return f"max({column}) FILTER (WHERE side = '{side}') AS {alias}"


# Each scorer, version and case with both sides' values in one row: the cases pivoted by side
# in one pass (a self-join of the cases, estimated at a row a side, was planned as a nested
# loop over every pair: 1.2M comparisons for 1,200 cases).
PAIRED = (
    "paired AS (SELECT k.scorer, k.scorer_version, k.case_id, "
    + ", ".join(
        _side(column, side, f"{side[0]}_{name}")
        for side in ("baseline", "candidate")
        for column, name in (
            ("k.rate", "rate"),
            ("k.failures", "failures"),
            ("k.missing", "missing"),
            ("k.runs", "runs"),
            ("k.trace_id", "run"),
        )
    )
    + ", count(*) FILTER (WHERE side = 'baseline') AS b_n, "
    "count(*) FILTER (WHERE side = 'candidate') AS c_n "
    f"FROM cases k JOIN {SIDES} ON s.selection = k.selection GROUP BY 1, 2, 3)"
)

PANELS: tuple[PanelSpec, ...] = (
    panel(
        UID,
        "Per scorer: baseline and candidate, with 95% intervals",
        "table",
        "SELECT scorer, scorer_version, side, count(*) AS cases, avg(rate) AS rate, "
        "avg(rate) - 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_low, "
        "avg(rate) + 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_high, "
        "sum(missing) AS missing_runs, "
        "count(*) FILTER (WHERE passes > 0 AND passes < judged) AS flaky_cases "
        f"FROM (SELECT s.side, k.scorer, k.scorer_version, k.rate, k.missing, k.passes, "
        f"k.judged FROM ({_cases()}) k "
        f"JOIN {SIDES} ON s.selection = k.selection) x "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
        "scorer scorer_version side cases rate ci_low ci_high missing_runs flaky_cases",
        width=24,
        description="Pass rate (or mean score) of each side over its cases, repeats averaged, "
        "with a normal 95% interval over the cases (clustered by case). A run without an "
        "answer (an error, a timeout, no response, a failed judge) counts as a failure of a "
        "pass/fail scorer and is counted in missing_runs; flaky_cases passed in some runs and "
        "not in others. `agentdocket compare` gives the paired test.",
    ),
    panel(
        UID,
        "Cases that regressed and improved",
        "table",
        f"WITH cases AS ({_cases_with_failures()}), {PAIRED} "
        f"SELECT scorer, case_id, CASE WHEN {LOST_PAIRED} THEN 'lost its answer' "
        "WHEN c_rate < b_rate THEN 'regressed' ELSE 'improved' "
        "END AS change, b_rate AS baseline, c_rate AS candidate, "
        "b_failures AS baseline_failures, c_failures AS candidate_failures, "
        "c_missing AS candidate_missing, b_run AS baseline_run, c_run AS candidate_run "
        f"FROM paired WHERE b_n > 0 AND c_n > 0 AND (c_rate <> b_rate OR {LOST_PAIRED}) "
        "ORDER BY 3 DESC, 1, 2 LIMIT 500",
        "scorer case_id change baseline candidate baseline_failures candidate_failures "
        "candidate_missing baseline_run candidate_run",
        width=24,
        height=12,
        links={
            "baseline_run": run.RUN_LINK,
            "candidate_run": run.RUN_LINK,
            "case_id": run.runs_link("case_id"),
        },
    ),
    panel(
        UID,
        "Flaky cases: repeats that disagree",
        "table",
        "SELECT s.side, k.scorer, k.scorer_version, k.case_id, k.passes, k.judged, k.missing, "
        f"k.trace_id FROM ({_cases_with_failures()}) k JOIN {SIDES} "
        "ON s.selection = k.selection "
        "WHERE k.passes > 0 AND k.passes < k.judged ORDER BY 1, 2, 3, 4 LIMIT 500",
        "side scorer scorer_version case_id passes judged missing trace_id",
        width=24,
        height=8,
        description="Cases of repeated runs (`experiment run --repeat K`) that passed in some "
        "runs and not in others, per side: `agentdocket report --experiment NAME` gives "
        "pass@k and pass^k.",
        links={"trace_id": run.RUN_LINK, "case_id": run.runs_link("case_id")},
    ),
)
