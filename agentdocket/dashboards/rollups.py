"""Hourly rollups for the dashboards (PostgreSQL): how they are computed and read.

The panels aggregate hours, not runs: at 1M runs the row-level views take seconds per panel,
these take milliseconds. Rollups are projections of the projections, so they follow one rule:
a stale hour is never read from its rollup. The tables (``rollup_*``) and the triggers that
mark stale hours in ``rollup_stale`` hold data, so migration 0005 made them; what reads them is
here and is re-created by every ``agentdocket migrate``:

- ``rollup_*_pending`` views aggregate the stale hours from the projections, live.
- The ``dashboard_*_stats`` views read a rollup's fresh hours and the pending view's stale ones,
  so a panel is exact whether or not the rollups were refreshed; refreshing only keeps it fast.
- ``agentdocket_refresh_rollups(from, to)`` (called by ``agentdocket refresh-dashboards``, the
  scoring runner and ``agentdocket serve``, a day of stale hours per repeatable-read
  transaction) replaces those hours' rollup rows with their pending rows and deletes the marks
  its snapshot saw: what committed after it keeps its marks.

Hours are UTC hours. Runs are counted by their start. Verdict rollups keep the latest run-level
verdict of each (run, scorer, version), as ``verdicts_latest`` defines it.

- ``dashboard_run_stats``: per hour and agent, version, strategy, model, dataset: runs, errors,
  summed latency and step counts. ``dashboard_run_latency``: per hour, agent and dataset, runs
  per latency bucket (8 per doubling, so a quantile found in it is within one 9% bucket of the
  exact one).
- ``dashboard_verdict_stats``: per hour, agent, dataset, scorer, version and failure type:
  verdicts, decided (pass or fail), passed, scored and the sum of scores.
- ``dashboard_verdict_measures``: per hour, agent, dataset, scorer, version, measure and label:
  a count and a sum (:data:`~agentdocket.dashboards.measures.MEASURES`).
- ``dashboard_verdict_transitions``: per hour, agent, dataset and scorer: how many runs had
  outcome A in one version and outcome B in another.
- ``dashboard_experiment_stats``: per hour, dataset, selection (``experiment:NAME``,
  ``AGENT@VERSION``, ``AGENT``), scorer, version, case and failure type: verdicts, how many
  have a rate (pass as 1 or 0, else the score), the sum of the rates, the least trace id, and
  how many runs miss an outcome, have a pass or fail, and passed (what the experiments
  dashboard compares, case by case).
"""

from __future__ import annotations

from agentdocket.dashboards import measures
from agentdocket.store.derived import Derived

# The stale hours of one kind; the refresh takes them a range at a time.
STALE = "(SELECT DISTINCT hour FROM rollup_stale WHERE what = '{}'{{bounds}})"
IN_RANGE = " AND hour BETWEEN from_hour AND to_hour"
OUTCOME = (
    "coalesce({t}.label, CASE WHEN {t}.passed THEN 'pass' WHEN NOT {t}.passed THEN 'fail' "
    "ELSE 'scored' END)"
)

# The runs of the stale hours (r), and the latest run-level verdicts of the stale hours' runs
# (l, from ``verdicts_latest``), which the aggregations below read. Both are driven from the
# stale hours through the runs' time index to each run's verdicts: the cost follows the stale
# hours, never the whole tables. Each lateral subquery must stay a per-row index lookup: as a
# join, the planner, which cannot estimate a range per hour, may scan every run against every
# stale hour, and hash the whole verdicts table twice for the anti-join of verdicts_latest (9-10
# s a panel at 5M verdicts, against milliseconds). The runs' subquery is kept apart by its
# DISTINCT (its rows are distinct anyway), not by OFFSET 0 as the verdicts' is: on Citus the
# stale hours are the coordinator's, and a lateral subquery correlated on such rows may not have
# an OFFSET, but may have a DISTINCT that holds trace_id (each shard's runs then hold their own
# distinct rows). Correlated on a run, the verdicts' lookup goes to the run's shard.
RUN_COLUMNS = (
    "r.trace_id, r.run_month, r.agent, r.agent_version, r.strategy, r.model, r.dataset, "
    "r.is_error, r.latency_ms, r.n_steps, r.n_tool_calls, r.n_llm_calls"
)
STALE_RUNS = f"""
    SELECT h.hour, r.* FROM {STALE.format("runs")} h
    CROSS JOIN LATERAL (
        SELECT DISTINCT {RUN_COLUMNS} FROM dashboard_runs r
        WHERE r.time >= h.hour AND r.time < h.hour + interval '1 hour'
    ) r
"""
LATEST = f"""
    SELECT h.hour, r.trace_id, r.run_month, r.agent, r.agent_version, r.dataset, r.case_id,
        r.experiment, r.is_error, v.scorer, v.scorer_version, v.passed, v.score, v.label,
        v.failure_type, v.details
    FROM {STALE.format("verdicts")} h
    CROSS JOIN LATERAL (
        SELECT DISTINCT r.trace_id, r.run_month, r.agent, r.agent_version, r.dataset,
            r.case_id, r.experiment, r.is_error
        FROM dashboard_runs r
        WHERE r.time >= h.hour AND r.time < h.hour + interval '1 hour'
    ) r
    CROSS JOIN LATERAL (
        SELECT * FROM verdicts_latest v
        WHERE v.trace_id = r.trace_id AND v.run_month = r.run_month
            AND v.subject_span_id IS NULL OFFSET 0
    ) v
"""


RUNS = """
            SELECT hour, agent, agent_version, strategy, model, dataset, count(*) AS runs,
                sum(is_error) AS errors, count(latency_ms) AS timed,
                sum(latency_ms) AS latency_ms, sum(n_steps) AS steps,
                sum(n_tool_calls) AS tool_calls, sum(n_llm_calls) AS llm_calls
            FROM r GROUP BY 1, 2, 3, 4, 5, 6
        """


LATENCY = """
        SELECT hour, agent, dataset, dashboard_latency_bucket(latency_ms) AS bucket,
                count(*) AS runs
            FROM r WHERE latency_ms IS NOT NULL GROUP BY 1, 2, 3, 4
        """


VERDICTS = """
        SELECT hour, agent, dataset, scorer, scorer_version, failure_type, count(*) AS verdicts,
                count(passed) AS decided, count(*) FILTER (WHERE passed) AS passed,
                count(score) AS scored, sum(score) AS score_sum
            FROM l GROUP BY 1, 2, 3, 4, 5, 6
        """

# Every ordered pair of versions that judged the same run, without joining l to itself.
TRANSITIONS = f"""
        SELECT g.hour, g.agent, g.dataset, g.scorer, a.version AS version_a,
                b.version AS version_b, a.outcome AS outcome_a, b.outcome AS outcome_b,
                count(*) AS runs
            FROM (
                SELECT hour, agent, dataset, trace_id, scorer,
                    array_agg(scorer_version) AS versions,
                    array_agg({OUTCOME.format(t="l")}) AS outcomes
                FROM l GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1
            ) g
            CROSS JOIN LATERAL unnest(g.versions, g.outcomes) a(version, outcome)
            CROSS JOIN LATERAL unnest(g.versions, g.outcomes) b(version, outcome)
            WHERE a.version <> b.version
            GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
        """


# Per case, each selection that picks the run (as `agentdocket compare` names them:
# experiment:NAME, AGENT@VERSION, AGENT; runs with no agent, dataset or case are in none), its
# verdicts' count, how many have a rate (pass as 1 or 0, else the score) and their sum, and how
# many runs miss an outcome (an errored run, whatever its verdict says; a verdict with a failure
# type and neither pass nor score), have a pass or fail, and passed: the experiments dashboard
# averages a case's repeats from these, a missing run failing a pass/fail scorer. (The
# selections are rows of a VALUES list, each with whether it applies: Citus does not run a
# UNION of subqueries without a FROM.)
EXPERIMENTS = """
        SELECT l.hour, l.dataset, s.selection, l.scorer, l.scorer_version, l.case_id,
                l.failure_type, count(*) AS verdicts, count(x.rate) AS rated,
                sum(x.rate) AS rate_sum, min(l.trace_id) AS first_run,
                count(*) FILTER (WHERE x.missing) AS missing,
                count(*) FILTER (WHERE NOT x.missing AND l.passed IS NOT NULL) AS decided,
                count(*) FILTER (WHERE NOT x.missing AND l.passed) AS passes
            FROM l
            CROSS JOIN LATERAL (VALUES
                (l.experiment IS NOT NULL, 'experiment:' || l.experiment),
                (l.agent_version <> '(none)', l.agent || '@' || l.agent_version),
                (true, l.agent)
            ) s(applies, selection)
            CROSS JOIN LATERAL (SELECT
                CASE WHEN l.is_error = 0 THEN coalesce(
                    CASE WHEN l.passed THEN 1.0 WHEN NOT l.passed THEN 0.0 END, l.score)
                END AS rate,
                l.is_error = 1 OR (l.passed IS NULL AND l.score IS NULL
                    AND l.failure_type IS NOT NULL) AS missing) x
            WHERE s.applies AND l.case_id IS NOT NULL AND l.dataset <> '(none)'
                AND l.agent <> '(none)'
            GROUP BY 1, 2, 3, 4, 5, 6, 7
        """


def _aggregate() -> dict[str, str]:
    """Each rollup's rows, aggregated from r (runs) or l (latest verdicts); columns in table
    order."""
    return {
        "rollup_runs": RUNS,
        "rollup_latency": LATENCY,
        "rollup_verdicts": VERDICTS,
        "rollup_measures": measures.aggregate(),
        "rollup_transitions": TRANSITIONS,
        "rollup_experiments": EXPERIMENTS,
    }


RUN_ROLLUPS = ("rollup_runs", "rollup_latency")
# The order a refresh writes each rollup's rows in: the order of their index (hour, then the
# scorer or measure panels pick), so that a panel reads a few adjacent pages per hour.
ORDER = {
    "rollup_runs": "hour",
    "rollup_latency": "hour",
    "rollup_verdicts": "hour, scorer",
    "rollup_measures": "hour, measure",
    "rollup_transitions": "hour, scorer",
    "rollup_experiments": "hour, dataset, selection",
}
VERDICT_ROLLUPS = (
    "rollup_verdicts",
    "rollup_measures",
    "rollup_transitions",
    "rollup_experiments",
)


def _source(name: str, bounds: str = "") -> str:
    """The CTE of runs (r) or latest verdicts (l) of the stale hours (within ``bounds``)."""
    body = STALE_RUNS if name == "r" else LATEST
    return f"{name} AS MATERIALIZED ({body.format(bounds=bounds)})"


# What the stale hours aggregate to, live: one view per rollup. A panel's filters reach into
# them (a measure panel computes only its measures). The refresh computes each source once for
# all its rollups instead.
def _pending_view(table: str, aggregate: dict[str, str]) -> str:
    source = _source("r" if table in RUN_ROLLUPS else "l")
    return f"CREATE VIEW {table}_pending AS WITH {source} {aggregate[table]}"


def _refresh_function(aggregate: dict[str, str]) -> str:
    """agentdocket_refresh_rollups(from_hour, to_hour): the stale hours in that range."""
    steps = []
    for source, tables, what in (("r", RUN_ROLLUPS, "runs"), ("l", VERDICT_ROLLUPS, "verdicts")):
        stale = STALE.format(what).format(bounds=IN_RANGE)
        inserts = ", ".join(
            f"i_{t} AS (INSERT INTO {t} {aggregate[t]} ORDER BY {ORDER[t]} RETURNING 1)"
            for t in tables
        )
        counted = " + ".join(f"(SELECT count(*) FROM i_{t})" for t in tables)
        deletes = " ".join(f"DELETE FROM {t} WHERE hour IN {stale};" for t in tables)
        steps.append(
            f"IF EXISTS {stale} THEN {deletes} "
            f"WITH {_source(source, IN_RANGE)}, {inserts} SELECT {counted} INTO k; "
            "n := n + k; END IF;"
        )
    return f"""
        CREATE FUNCTION agentdocket_refresh_rollups(
            from_hour timestamptz, to_hour timestamptz,
            OUT run_hours bigint, OUT verdict_hours bigint, OUT rollup_rows bigint)
        LANGUAGE plpgsql SET jit = off SET work_mem = '64MB' AS $$
        DECLARE n bigint := 0; k bigint;
        BEGIN
            SELECT count(DISTINCT hour) FILTER (WHERE what = 'runs'),
                   count(DISTINCT hour) FILTER (WHERE what = 'verdicts')
            INTO run_hours, verdict_hours FROM rollup_stale
            WHERE hour BETWEEN from_hour AND to_hour;
            {" ".join(steps)}
            -- only the marks this snapshot sees: later ones are for rows it did not see
            DELETE FROM rollup_stale WHERE hour BETWEEN from_hour AND to_hour;
            rollup_rows := n;
        END $$
    """


# The stable layer: a rollup's fresh hours, and its stale hours live.
STATS = {
    "dashboard_run_stats": ("rollup_runs", "runs"),
    "dashboard_run_latency": ("rollup_latency", "runs"),
    "dashboard_verdict_stats": ("rollup_verdicts", "verdicts"),
    "dashboard_verdict_measures": ("rollup_measures", "verdicts"),
    "dashboard_verdict_transitions": ("rollup_transitions", "verdicts"),
    "dashboard_experiment_stats": ("rollup_experiments", "verdicts"),
}


# Each rollup's columns; * marks the "C"-collated keys, which the pending side must match.
COLUMNS = {
    "rollup_runs": "hour agent* agent_version* strategy* model* dataset* runs errors timed "
    "latency_ms steps tool_calls llm_calls",
    "rollup_latency": "hour agent* dataset* bucket runs",
    "rollup_verdicts": "hour agent* dataset* scorer* scorer_version* failure_type* verdicts "
    "decided passed scored score_sum",
    "rollup_measures": "hour agent* dataset* scorer* scorer_version* measure* label* n total",
    "rollup_transitions": "hour agent* dataset* scorer* version_a* version_b* outcome_a* "
    "outcome_b* runs",
    "rollup_experiments": "hour dataset* selection* scorer* scorer_version* case_id* "
    "failure_type* verdicts rated rate_sum first_run* missing decided passes",
}


# Each stats view reads its stale hours through a function rather than its pending view.
# - On Citus: a view mixing the coordinator's rollup table with a subquery over distributed
#   tables had Citus copy the whole rollup table (every hour, before the panel's filters)
#   into an intermediate result for each panel, 0.1-0.3 s a panel. A function's query is
#   planned apart, so the panel runs on the coordinator with its filters on the rollup
#   (tests/contract/test_citus_plans.py).
# - On PostgreSQL: planned as a subquery, the pending view's estimate (every run of a stale
#   hour, each with its verdicts) dwarfed the rest for the experiments panels (some 100k
#   rollup rows a side), which the planner then sorted, three times slower; a function's
#   estimate is its declared one, a few rows, as stale hours are few. Every panel together
#   took 549 / 548 / 585 ms with functions against 666 / 657 / 639 ms with the pending views
#   (bench/dashboards.py --runs 100000: fresh / recording / scored, 2026-11-29).
# SECURITY DEFINER: it reads with its owner's rights, as the view does.
PENDING_FUNCTIONS = tuple(COLUMNS)


def _pending_columns(table: str) -> str:
    """The rollup's columns as its pending side gives them: the keys in the "C" collation of
    the table's."""
    return ", ".join(
        f'{c[:-1]} COLLATE "C" AS {c[:-1]}' if c.endswith("*") else c
        for c in COLUMNS[table].split()
    )


def _pending_function(table: str) -> str:
    return f"""
        CREATE FUNCTION agentdocket_{table}_pending() RETURNS SETOF {table}
        LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 100 SET search_path FROM CURRENT AS $$
        BEGIN
            RETURN QUERY SELECT {_pending_columns(table)} FROM {table}_pending;
        END $$
    """


def _stats_view(name: str, table: str, what: str) -> str:
    fresh = ", ".join(c.rstrip("*") for c in COLUMNS[table].split())
    stale = (
        f"SELECT hour AS time, {fresh} FROM agentdocket_{table}_pending()"
        if table in PENDING_FUNCTIONS
        else f"SELECT hour AS time, {_pending_columns(table)} FROM {table}_pending"
    )
    return (
        f"CREATE VIEW {name} AS "
        f"SELECT hour AS time, {fresh} FROM {table} "
        f"WHERE hour NOT IN (SELECT hour FROM rollup_stale WHERE what = '{what}') "
        f"UNION ALL {stale}"
    )


def objects() -> list[Derived]:
    """The pending views, the refresh function, the pending functions and the stats views, in
    that order."""
    aggregate = _aggregate()
    pending = [
        Derived(f"VIEW {t}_pending", _pending_view(t, aggregate), False, "postgresql")
        for t in aggregate
    ]
    refresh = Derived(
        "FUNCTION agentdocket_refresh_rollups(timestamptz, timestamptz)",
        _refresh_function(aggregate),
        False,
        "postgresql",
    )
    functions = [
        Derived(f"FUNCTION agentdocket_{t}_pending()", _pending_function(t), False, "postgresql")
        for t in PENDING_FUNCTIONS
    ]
    stats = [
        Derived(f"VIEW {name}", _stats_view(name, table, what), True, "postgresql")
        for name, (table, what) in STATS.items()
    ]
    return [*pending, refresh, *functions, *stats]
