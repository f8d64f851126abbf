"""Hourly rollups for the dashboards (PostgreSQL), kept exact by marking stale hours.

The panels aggregate hours, not runs: at 1M runs the row-level views of 0004 take seconds per
panel, these take milliseconds. Rollups are projections of the projections, so they follow one
rule: a stale hour is never read from its rollup.

- Triggers on ``runs`` and ``verdicts`` append (hour, what) to ``rollup_stale`` for every hour a
  statement touched: inserted, updated (both the old and the new hour) or deleted rows. The mark
  commits with the rows that made it.
- ``rollup_*_pending`` views aggregate the stale hours from the projections, live.
- The ``dashboard_*_stats`` views read a rollup's fresh hours and the pending view's stale ones,
  so a panel is exact whether or not the rollups were refreshed; refreshing only keeps it fast.
- A refresh (``agentdocket_refresh_rollups(from, to)``, called by ``agentdocket
  refresh-dashboards``, the scoring runner and ``agentdocket serve``, a day of stale hours per
  repeatable-read transaction) replaces those hours' rollup rows with their pending rows and
  deletes the marks its snapshot saw: what committed after it keeps its marks.

Hours are UTC hours (``agentdocket_hour``). Runs are counted by their start. Verdict rollups
keep the latest run-level verdict of each (run, scorer, version), as ``dashboard_verdicts``.

- ``dashboard_run_stats``: per hour and agent, version, strategy, model, dataset: runs, errors,
  summed latency and step counts. ``dashboard_run_latency``: per hour, agent and dataset, runs
  per latency bucket (``dashboard_latency_bucket``: 8 per doubling, so a quantile found in it is
  within one 9% bucket of the exact one).
- ``dashboard_verdict_stats``: per hour, agent, dataset, scorer, version and failure type:
  verdicts, decided (pass or fail), passed, scored and the sum of scores.
- ``dashboard_verdict_measures``: per hour, agent, dataset, scorer, version, measure and label:
  a count and a sum. The measures are what the panels chart out of a verdict's details (extra
  plan steps, the tools of a tool-use verdict's run, cosine and ROUGE-L, and
  ``cosine_bucket`` and ``rouge_l_f_bucket`` labelled by 0.05 buckets, reference matches and
  interpretive scores, peer review unanimity and every decision by judge model, GRAMMAR
  correctness, tags and blame).
- ``dashboard_verdict_transitions``: per hour, agent, dataset and scorer: how many runs had
  outcome A in one version and outcome B in another.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

RUN_TIME = "coalesce({t}.started_at, {t}.first_ts)"
TOOL_SCORERS = "('planner.suffix_match', 'tools.slot_fill', 'tools.procedural')"

FUNCTIONS = [
    # A UTC hour, whatever the session's time zone.
    """
    CREATE FUNCTION agentdocket_hour(t timestamptz) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN date_bin('1 hour', t, TIMESTAMPTZ '2000-01-01 00:00:00+00')
    """,
    # A JSON number as a double, else null (details are data: never fail a refresh on them).
    """
    CREATE FUNCTION agentdocket_number(j jsonb) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN jsonb_typeof(j) = 'number' THEN CAST(j #>> '{}' AS double precision) END
    """,
    """
    CREATE FUNCTION agentdocket_array(j jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN jsonb_typeof(j) = 'array' THEN j ELSE '[]'::jsonb END
    """,
    # 0.05-wide buckets of a similarity, as text ('0.85').
    """
    CREATE FUNCTION agentdocket_bucket(x double precision) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CAST(round(CAST(floor(x / 0.05) * 0.05 AS numeric), 2) AS text)
    """,
    # Latency buckets: 8 per doubling of milliseconds. Bucket b holds [2^(b/8), 2^((b+1)/8)).
    """
    CREATE FUNCTION dashboard_latency_bucket(ms double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CAST(floor(8 * ln(greatest(ms, 0.001)) / ln(2)) AS integer)
    """,
]

# The text keys are "C"-collated: byte order groups and sorts fastest, and lets a LIKE prefix
# (the panels' 'review.peer.%') use the indexes. One index per rollup, on the hour and what
# panels pick rows by: it serves a panel's range of hours and a refresh's stale hours.
KEY = 'text COLLATE "C" NOT NULL'
RUN_KEYS = (
    f"hour timestamptz NOT NULL, agent {KEY}, agent_version {KEY}, strategy {KEY}, "
    f"model {KEY}, dataset {KEY}"
)
VERDICT_KEYS = f"hour timestamptz NOT NULL, agent {KEY}, dataset {KEY}, scorer {KEY}"
TABLES = [
    "CREATE TABLE rollup_stale (id bigserial PRIMARY KEY, hour timestamptz NOT NULL, "
    "what text NOT NULL)",
    "CREATE INDEX rollup_stale_what ON rollup_stale (what, hour)",
    f"CREATE TABLE rollup_runs ({RUN_KEYS}, runs bigint NOT NULL, errors bigint NOT NULL, "
    "timed bigint NOT NULL, latency_ms double precision, steps bigint NOT NULL, "
    "tool_calls bigint NOT NULL, llm_calls bigint NOT NULL)",
    "CREATE INDEX rollup_runs_hour ON rollup_runs (hour)",
    f"CREATE TABLE rollup_latency (hour timestamptz NOT NULL, agent {KEY}, dataset {KEY}, "
    "bucket integer NOT NULL, runs bigint NOT NULL)",
    "CREATE INDEX rollup_latency_hour ON rollup_latency (hour)",
    f"CREATE TABLE rollup_verdicts ({VERDICT_KEYS}, scorer_version {KEY}, "
    'failure_type text COLLATE "C", verdicts bigint NOT NULL, decided bigint NOT NULL, '
    "passed bigint NOT NULL, scored bigint NOT NULL, score_sum double precision)",
    "CREATE INDEX rollup_verdicts_hour ON rollup_verdicts (hour, scorer)",
    f"CREATE TABLE rollup_measures ({VERDICT_KEYS}, scorer_version {KEY}, measure {KEY}, "
    'label text COLLATE "C", n bigint NOT NULL, total double precision)',
    "CREATE INDEX rollup_measures_hour ON rollup_measures (hour, measure)",
    f"CREATE TABLE rollup_transitions ({VERDICT_KEYS}, version_a {KEY}, version_b {KEY}, "
    f"outcome_a {KEY}, outcome_b {KEY}, runs bigint NOT NULL)",
    "CREATE INDEX rollup_transitions_hour ON rollup_transitions (hour, scorer)",
]


# Marking stale hours. A run's verdict rollups go stale with it only when what they are keyed
# or measured by moved: its time, agent, dataset or tools, and only if it has verdicts.
MARK = "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT agentdocket_hour(t), w FROM ({}) s "
MARK += "WHERE t IS NOT NULL"
HAS_VERDICTS = "EXISTS (SELECT 1 FROM verdicts v WHERE v.trace_id = {t}.trace_id)"
TRIGGERS = {
    ("runs", "INSERT", "NEW TABLE AS changed"): MARK.format(
        f"SELECT {RUN_TIME.format(t='c')} AS t, 'runs' AS w FROM changed c UNION ALL "
        f"SELECT {RUN_TIME.format(t='c')}, 'verdicts' FROM changed c "
        f"WHERE {HAS_VERDICTS.format(t='c')}"
    ),
    ("runs", "UPDATE", "OLD TABLE AS before NEW TABLE AS changed"): MARK.format(
        f"SELECT {RUN_TIME.format(t='o')} AS t, 'runs' AS w FROM before o UNION ALL "
        f"SELECT {RUN_TIME.format(t='c')}, 'runs' FROM changed c UNION ALL "
        f"SELECT x.t, 'verdicts' FROM before o JOIN changed c ON c.trace_id = o.trace_id "
        f"CROSS JOIN LATERAL (VALUES ({RUN_TIME.format(t='o')}), ({RUN_TIME.format(t='c')})) x(t) "
        f"WHERE ({RUN_TIME.format(t='o')} IS DISTINCT FROM {RUN_TIME.format(t='c')} "
        "OR o.agent IS DISTINCT FROM c.agent OR o.dataset IS DISTINCT FROM c.dataset "
        f"OR o.n_tool_calls <> c.n_tool_calls) AND {HAS_VERDICTS.format(t='c')}"
    ),
    ("runs", "DELETE", "OLD TABLE AS before"): MARK.format(
        f"SELECT {RUN_TIME.format(t='o')} AS t, w FROM before o "
        "CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w)"
    ),
    ("verdicts", "INSERT", "NEW TABLE AS changed"): MARK.format(
        f"SELECT {RUN_TIME.format(t='r')} AS t, 'verdicts' AS w FROM changed c "
        "JOIN runs r ON r.trace_id = c.trace_id WHERE c.subject_span_id IS NULL"
    ),
    ("verdicts", "DELETE", "OLD TABLE AS before"): MARK.format(
        f"SELECT {RUN_TIME.format(t='r')} AS t, 'verdicts' AS w FROM before o "
        "JOIN runs r ON r.trace_id = o.trace_id WHERE o.subject_span_id IS NULL"
    ),
}


def trigger_sql(table: str, event: str, referencing: str, body: str) -> list[str]:
    name = f"rollup_mark_{table}_{event.lower()}"
    return [
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {body}; RETURN NULL; END $$",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {referencing} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()",
    ]


# The stale hours of one kind; the refresh takes them a range at a time.
STALE = "(SELECT DISTINCT hour FROM rollup_stale WHERE what = '{}'{{bounds}})"
IN_RANGE = " AND hour BETWEEN from_hour AND to_hour"
OUTCOME = (
    "coalesce({t}.label, CASE WHEN {t}.passed THEN 'pass' WHEN NOT {t}.passed THEN 'fail' "
    "ELSE 'scored' END)"
)

# The runs of the stale hours (r), and the latest run-level verdicts of the stale hours' runs
# (l), which the aggregations below read. Both are driven from the stale hours through the
# runs' time index to each run's verdicts: the cost follows the stale hours, never the whole
# tables. (OFFSET 0 keeps a lateral subquery a per-row index lookup: without it the planner,
# which cannot estimate a range per hour, may scan every run against every stale hour.)
STALE_RUNS = f"""
    SELECT h.hour, r.* FROM {STALE.format("runs")} h
    CROSS JOIN LATERAL (
        SELECT * FROM dashboard_runs r
        WHERE r.time >= h.hour AND r.time < h.hour + interval '1 hour' OFFSET 0
    ) r
"""
LATEST = f"""
    SELECT h.hour, r.trace_id, r.agent, r.dataset, v.scorer, v.scorer_version, v.passed,
        v.score, v.label, v.failure_type, v.details
    FROM {STALE.format("verdicts")} h
    CROSS JOIN LATERAL (
        SELECT r.trace_id, r.agent, r.dataset FROM dashboard_runs r
        WHERE r.time >= h.hour AND r.time < h.hour + interval '1 hour' OFFSET 0
    ) r
    CROSS JOIN LATERAL (
        SELECT DISTINCT ON (v.scorer, v.scorer_version) v.* FROM verdicts v
        WHERE v.trace_id = r.trace_id AND v.subject_span_id IS NULL
        ORDER BY v.scorer, v.scorer_version, v.ts DESC, v.verdict_id DESC
    ) v
"""
K = "l.hour, l.agent, l.dataset, l.scorer, l.scorer_version"
# Each rollup's rows, aggregated from r (runs) or l (latest verdicts); columns in table order.
AGGREGATE = {
    "rollup_runs": """
        SELECT hour, agent, agent_version, strategy, model, dataset, count(*) AS runs,
            sum(is_error) AS errors, count(latency_ms) AS timed, sum(latency_ms) AS latency_ms,
            sum(n_steps) AS steps, sum(n_tool_calls) AS tool_calls, sum(n_llm_calls) AS llm_calls
        FROM r GROUP BY 1, 2, 3, 4, 5, 6
    """,
    "rollup_latency": """
        SELECT hour, agent, dataset, dashboard_latency_bucket(latency_ms) AS bucket,
            count(*) AS runs
        FROM r WHERE latency_ms IS NOT NULL GROUP BY 1, 2, 3, 4
    """,
    "rollup_verdicts": """
        SELECT hour, agent, dataset, scorer, scorer_version, failure_type, count(*) AS verdicts,
            count(passed) AS decided, count(*) FILTER (WHERE passed) AS passed,
            count(score) AS scored, sum(score) AS score_sum
        FROM l GROUP BY 1, 2, 3, 4, 5, 6
    """,
    "rollup_measures": f"""
        SELECT hour, agent, dataset, scorer, scorer_version, measure, label, count(*) AS n,
            sum(value) AS total
        FROM (
            SELECT {K}, 'extra_steps' AS measure, CAST(x.v AS text) AS label, x.v AS value
            FROM l CROSS JOIN LATERAL (SELECT agentdocket_number(l.details->'extra_steps')) x(v)
            WHERE l.scorer = 'planner.suffix_match' AND x.v IS NOT NULL
            UNION ALL
            SELECT g.hour, g.agent, g.dataset, x.scorer, x.scorer_version, 'tool', t.tool,
                CASE WHEN x.passed THEN 1.0 ELSE 0.0 END
            FROM (
                SELECT hour, agent, dataset, array_agg(scorer) AS scorers,
                    array_agg(scorer_version) AS versions, array_agg(passed) AS passed,
                    (SELECT array_agg(DISTINCT e.payload->>'tool') FROM events e
                     WHERE e.trace_id = l.trace_id AND e.kind = 'tool.called') AS tools
                FROM l WHERE l.scorer IN {TOOL_SCORERS} AND l.passed IS NOT NULL
                GROUP BY hour, agent, dataset, trace_id
            ) g
            CROSS JOIN LATERAL unnest(g.tools) t(tool)
            CROSS JOIN LATERAL unnest(g.scorers, g.versions, g.passed)
                x(scorer, scorer_version, passed)
            WHERE t.tool IS NOT NULL
            UNION ALL
            SELECT {K}, x.measure || y.suffix, CASE WHEN y.suffix <> '' THEN
                agentdocket_bucket(x.value) END, x.value
            FROM l CROSS JOIN LATERAL (VALUES
                ('cosine', agentdocket_number(l.details->'cosine'), true),
                ('rouge_l_f', agentdocket_number(l.details->'rougeL_fmeasure'), true),
                ('rouge_l_precision', agentdocket_number(l.details->'rougeL_precision'), false),
                ('rouge_l_recall', agentdocket_number(l.details->'rougeL_recall'), false)
            ) x(measure, value, bucketed)
            CROSS JOIN LATERAL (SELECT '' UNION ALL SELECT '_bucket' WHERE x.bucketed) y(suffix)
            WHERE l.scorer = 'response.similarity' AND x.value IS NOT NULL
            UNION ALL
            SELECT {K}, 'matched', NULL, CASE l.label WHEN 'Match' THEN 1.0 ELSE 0.0 END
            FROM l WHERE l.scorer = 'answer.reference' AND l.label IN ('Match', 'Not Match')
            UNION ALL
            SELECT {K}, 'interpretive_score', CAST(x.v AS text), x.v
            FROM l CROSS JOIN LATERAL (SELECT agentdocket_number(l.details->'score')) x(v)
            WHERE l.scorer = 'answer.reference' AND x.v IS NOT NULL
              AND l.details->>'question_type' = 'interpretive'
            UNION ALL
            SELECT {K}, x.measure, NULL, CASE x.value WHEN 'true' THEN 1.0 ELSE 0.0 END
            FROM l CROSS JOIN LATERAL (VALUES
                ('reviewers_unanimous', l.details->>'reviewers_unanimous'),
                ('meta_reviewers_unanimous', l.details->>'meta_reviewers_unanimous')
            ) x(measure, value)
            WHERE l.scorer LIKE 'review.peer.%' AND x.value IN ('true', 'false')
            UNION ALL
            SELECT {K}, d.role || '_decision',
                coalesce(d.models->>(CAST(x.i AS integer) - 1), '(unknown)'),
                CASE WHEN x.decision = 'Perfect' THEN 1.0 ELSE 0.0 END
            FROM l CROSS JOIN LATERAL (VALUES
                ('reviewer', l.details->'reviewer_decisions', l.details->'reviewer_models'),
                ('meta_reviewer', l.details->'meta_reviewer_decisions',
                 l.details->'meta_reviewer_models')
            ) d(role, decisions, models)
            CROSS JOIN LATERAL jsonb_array_elements_text(agentdocket_array(d.decisions))
                WITH ORDINALITY x(decision, i)
            WHERE l.scorer LIKE 'review.peer.%'
            UNION ALL
            SELECT {K}, x.measure, x.label, x.value
            FROM l CROSS JOIN LATERAL (SELECT
                agentdocket_number(l.details->'group_representative') = 1 AS representative
            ) g CROSS JOIN LATERAL (VALUES
                ('correct', NULL, CASE l.details->>'correct' WHEN 'true' THEN 1.0 ELSE 0.0 END),
                ('retrieval_correct', NULL,
                 CASE l.details->>'retrieval_correct' WHEN 'true' THEN 1.0 ELSE 0.0 END),
                ('refined_correct', NULL, CASE l.details->>'refined_correct'
                    WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0 END),
                ('knowledge', NULL, CASE WHEN g.representative THEN
                    CASE WHEN l.details->>'tag' = 'Gap' THEN 0.0 ELSE 1.0 END END),
                ('tag', l.details->>'tag',
                 CASE WHEN g.representative AND l.details->>'tag' IS NOT NULL THEN 1.0 END),
                ('blame', l.details->>'blame',
                 CASE WHEN l.details->>'blame' IS NOT NULL THEN 1.0 END)
            ) x(measure, label, value)
            WHERE l.scorer = 'grammar.groups' AND x.value IS NOT NULL
        ) m
        GROUP BY 1, 2, 3, 4, 5, 6, 7
    """,
    # Every ordered pair of versions that judged the same run, without joining l to itself.
    "rollup_transitions": f"""
        SELECT g.hour, g.agent, g.dataset, g.scorer, a.version AS version_a,
            b.version AS version_b, a.outcome AS outcome_a, b.outcome AS outcome_b,
            count(*) AS runs
        FROM (
            SELECT hour, agent, dataset, trace_id, scorer, array_agg(scorer_version) AS versions,
                array_agg({OUTCOME.format(t="l")}) AS outcomes
            FROM l GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1
        ) g
        CROSS JOIN LATERAL unnest(g.versions, g.outcomes) a(version, outcome)
        CROSS JOIN LATERAL unnest(g.versions, g.outcomes) b(version, outcome)
        WHERE a.version <> b.version
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8
    """,
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
}
VERDICT_ROLLUPS = ("rollup_verdicts", "rollup_measures", "rollup_transitions")


def _source(name: str, bounds: str = "") -> str:
    """The CTE of runs (r) or latest verdicts (l) of the stale hours (within ``bounds``)."""
    body = STALE_RUNS if name == "r" else LATEST
    return f"{name} AS MATERIALIZED ({body.format(bounds=bounds)})"


# What the stale hours aggregate to, live: one view per rollup. A panel's filters reach into
# them (a measure panel computes only its measures). The refresh computes each source once for
# all its rollups instead.
def _pending_view(table: str) -> str:
    source = _source("r" if table in RUN_ROLLUPS else "l")
    return f"CREATE VIEW {table}_pending AS WITH {source} {AGGREGATE[table]}"


def _refresh_function() -> str:
    """agentdocket_refresh_rollups(from_hour, to_hour): the stale hours in that range."""
    steps = []
    for source, tables, what in (("r", RUN_ROLLUPS, "runs"), ("l", VERDICT_ROLLUPS, "verdicts")):
        stale = STALE.format(what).format(bounds=IN_RANGE)
        inserts = ", ".join(
            f"i_{t} AS (INSERT INTO {t} {AGGREGATE[t]} ORDER BY {ORDER[t]} RETURNING 1)"
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
}


def _stats_view(name: str, table: str, what: str) -> str:
    columns = COLUMNS[table].split()
    fresh = ", ".join(c.rstrip("*") for c in columns)
    pending = ", ".join(
        f'{c[:-1]} COLLATE "C" AS {c[:-1]}' if c.endswith("*") else c for c in columns
    )
    return (
        f"CREATE VIEW {name} AS "
        f"SELECT hour AS time, {fresh} FROM {table} "
        f"WHERE hour NOT IN (SELECT hour FROM rollup_stale WHERE what = '{what}') "
        f"UNION ALL SELECT hour AS time, {pending} FROM {table}_pending"
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in FUNCTIONS + TABLES:
        op.execute(statement)
    for table in AGGREGATE:
        op.execute(_pending_view(table))
    op.execute(_refresh_function())
    for name, (table, what) in STATS.items():
        op.execute(_stats_view(name, table, what))
    for (table, event, referencing), body in TRIGGERS.items():
        for statement in trigger_sql(table, event, referencing, body):
            op.execute(statement)
    # Everything already stored is stale: the views read it live until the first refresh.
    op.execute(
        MARK.format(
            f"SELECT {RUN_TIME.format(t='r')} AS t, w FROM runs r CROSS JOIN "
            "(VALUES ('runs'), ('verdicts')) k(w)"
        )
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, event, _ in TRIGGERS:
        name = f"rollup_mark_{table}_{event.lower()}"
        op.execute(f"DROP TRIGGER {name} ON {table}")
        op.execute(f"DROP FUNCTION {name}()")
    for name in reversed(list(STATS)):
        op.execute(f"DROP VIEW {name}")
    op.execute("DROP FUNCTION agentdocket_refresh_rollups(timestamptz, timestamptz)")
    for table in AGGREGATE:
        op.execute(f"DROP VIEW {table}_pending")
    for table in ("transitions", "measures", "verdicts", "latency", "runs", "stale"):
        op.execute(f"DROP TABLE rollup_{table}")
    for function in (
        "dashboard_latency_bucket(double precision)",
        "agentdocket_bucket(double precision)",
        "agentdocket_array(jsonb)",
        "agentdocket_number(jsonb)",
        "agentdocket_hour(timestamptz)",
    ):
        op.execute(f"DROP FUNCTION {function}")
