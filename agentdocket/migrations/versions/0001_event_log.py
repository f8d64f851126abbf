"""Event log, projections (runs, steps, verdicts), datasets and cases.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# PostgreSQL: JSONB payloads, timestamptz, uuid ids. An event id is derived from its trace id
# (and span, kind, index), so the key (trace_id, event_id) recognises a re-sent event and is also
# the index for reading a trace. Time ranges use a BRIN index on ts. No foreign keys and no
# identity column point at events, so it can later become a table partitioned by ts.
# The steps of each run: a view over the event log, so it is always current and never needs
# rebuilding. A tool step is its tool.called joined with the matching tool.returned.
STEPS_VIEW_TEMPLATE = """
    CREATE VIEW steps AS
    SELECT e.trace_id, {event_id} AS step_id, e.span_id, e.parent_span_id, e.seq, e.ts,
        CASE e.kind WHEN 'tool.called' THEN 'tool' WHEN 'sql.executed' THEN 'sql'
            WHEN 'llm.called' THEN 'llm' ELSE e.kind END AS kind,
        CASE e.kind WHEN 'tool.called' THEN {tool} WHEN 'sql.executed' THEN {database}
            WHEN 'llm.called' THEN {model} WHEN 'message' THEN {role}
            WHEN 'retrieval' THEN substr({query}, 1, 200) WHEN 'step' THEN {name} END AS name,
        CASE WHEN e.kind = 'tool.called' THEN
                CASE WHEN r.payload IS NULL THEN NULL
                     WHEN {r_error} IS NOT NULL THEN 'error' ELSE 'ok' END
             WHEN {error} IS NOT NULL OR {status} = 'error' THEN 'error'
             ELSE 'ok' END AS status,
        coalesce({r_error}, {error}) AS error,
        CAST(coalesce({r_duration}, {duration}) AS {float}) AS duration_ms,
        {call_id} AS call_id
    FROM events e
    {returned}
    WHERE e.kind IN ('plan', 'tool.called', 'sql.executed', 'retrieval', 'llm.called',
                     'message', 'response', 'step')
"""


def steps_view(*, text: str, r_text: str, event_id: str, float: str, returned: str) -> str:
    """The steps view in one dialect: ``text`` / ``r_text`` extract a payload field as text."""
    fields = ("tool", "database", "model", "role", "query", "name", "error", "status", "call_id")
    values = {f: text.format(f) for f in fields}
    values["duration"] = text.format("duration_ms")
    values["r_error"] = r_text.format("error")
    values["r_duration"] = r_text.format("duration_ms")
    return STEPS_VIEW_TEMPLATE.format(event_id=event_id, float=float, returned=returned, **values)


POSTGRES_UP = [
    """
    CREATE TABLE events (
        event_id uuid NOT NULL,
        trace_id text COLLATE "C" NOT NULL,
        span_id text COLLATE "C" NOT NULL,
        parent_span_id text,
        seq bigint NOT NULL,
        ts timestamptz NOT NULL,
        kind text NOT NULL,
        schema_version smallint NOT NULL,
        payload jsonb NOT NULL,
        PRIMARY KEY (trace_id, event_id)
    )
    """,
    "CREATE INDEX events_ts ON events USING brin (ts)",
    """
    CREATE FUNCTION agentdocket_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'agentdocket: % on table % refused: it is append-only', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END
    $$
    """,
    """
    CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION agentdocket_refuse_change()
    """,
    """
    CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION agentdocket_refuse_change()
    """,
    """
    CREATE TABLE runs (
        trace_id text COLLATE "C" PRIMARY KEY,
        agent text, agent_version text, strategy text, models jsonb, question text,
        dataset text, dataset_version text, case_id text, attributes jsonb,
        status text, error text,
        started_at timestamptz, ended_at timestamptz, first_ts timestamptz, last_ts timestamptz,
        n_events integer NOT NULL, n_steps integer NOT NULL, n_errors integer NOT NULL,
        n_plans integer NOT NULL, n_tool_calls integer NOT NULL, n_sql integer NOT NULL,
        n_retrievals integer NOT NULL, n_llm_calls integer NOT NULL, n_messages integer NOT NULL,
        n_responses integer NOT NULL, n_other_steps integer NOT NULL, n_verdicts integer NOT NULL
    )
    """,
    "CREATE INDEX runs_started ON runs (started_at)",
    "CREATE INDEX runs_dataset ON runs (dataset, case_id)",
    "CREATE INDEX runs_agent ON runs (agent, agent_version)",
    steps_view(
        text="e.payload->>'{}'",
        r_text="r.payload->>'{}'",
        event_id="e.event_id::text",
        float="double precision",
        returned="""LEFT JOIN LATERAL (
            SELECT r.payload FROM events r
            WHERE e.kind = 'tool.called' AND r.trace_id = e.trace_id AND r.kind = 'tool.returned'
              AND r.payload->>'call_id' = e.payload->>'call_id'
            ORDER BY r.seq LIMIT 1) r ON true""",
    ),
    """
    CREATE TABLE verdicts (
        verdict_id text COLLATE "C" PRIMARY KEY,
        trace_id text COLLATE "C" NOT NULL, subject_span_id text,
        scorer text NOT NULL, scorer_version text NOT NULL, input_hash text NOT NULL,
        passed boolean, score double precision, label text, failure_type text, rationale text,
        details jsonb NOT NULL, judge_trace_id text, ts timestamptz NOT NULL
    )
    """,
    "CREATE INDEX verdicts_subject ON verdicts (trace_id, scorer, scorer_version, ts)",
    "CREATE INDEX verdicts_scorer ON verdicts (scorer, scorer_version)",
    """
    CREATE VIEW verdicts_latest AS
    SELECT * FROM (
        SELECT v.*, row_number() OVER (
            PARTITION BY trace_id, scorer, scorer_version, coalesce(subject_span_id, '')
            ORDER BY ts DESC, verdict_id DESC) AS rn
        FROM verdicts v) ranked
    WHERE rn = 1
    """,
    """
    CREATE TABLE datasets (
        name text NOT NULL, version text NOT NULL, description text,
        content_hash text NOT NULL, n_cases integer NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (name, version)
    )
    """,
    """
    CREATE TABLE cases (
        dataset text NOT NULL, dataset_version text NOT NULL, case_id text NOT NULL,
        ordinal integer NOT NULL, question_type text, group_id text, data jsonb NOT NULL,
        PRIMARY KEY (dataset, dataset_version, case_id),
        FOREIGN KEY (dataset, dataset_version) REFERENCES datasets (name, version)
    )
    """,
    """
    CREATE TRIGGER datasets_immutable BEFORE UPDATE OR DELETE ON datasets
    FOR EACH ROW EXECUTE FUNCTION agentdocket_refuse_change()
    """,
    """
    CREATE TRIGGER cases_immutable BEFORE UPDATE OR DELETE ON cases
    FOR EACH ROW EXECUTE FUNCTION agentdocket_refuse_change()
    """,
]

POSTGRES_DOWN = [
    "DROP TABLE cases",
    "DROP TABLE datasets",
    "DROP VIEW verdicts_latest",
    "DROP TABLE verdicts",
    "DROP VIEW steps",
    "DROP TABLE runs",
    "DROP TABLE events",
    "DROP FUNCTION agentdocket_refuse_change()",
]

# SQLite: JSON as text, timestamps as fixed-width ISO 8601 text in UTC ("...Z"), which sorts.
SQLITE_UP = [
    """
    CREATE TABLE events (
        event_id text NOT NULL,
        trace_id text NOT NULL,
        span_id text NOT NULL,
        parent_span_id text,
        seq integer NOT NULL,
        ts text NOT NULL,
        kind text NOT NULL,
        schema_version integer NOT NULL,
        payload text NOT NULL,
        PRIMARY KEY (trace_id, event_id)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX events_ts ON events (ts)",
    """
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'agentdocket: UPDATE on table events refused: it is append-only'); END
    """,
    """
    CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'agentdocket: DELETE on table events refused: it is append-only'); END
    """,
    """
    CREATE TABLE runs (
        trace_id text PRIMARY KEY,
        agent text, agent_version text, strategy text, models text, question text,
        dataset text, dataset_version text, case_id text, attributes text,
        status text, error text,
        started_at text, ended_at text, first_ts text, last_ts text,
        n_events integer NOT NULL, n_steps integer NOT NULL, n_errors integer NOT NULL,
        n_plans integer NOT NULL, n_tool_calls integer NOT NULL, n_sql integer NOT NULL,
        n_retrievals integer NOT NULL, n_llm_calls integer NOT NULL, n_messages integer NOT NULL,
        n_responses integer NOT NULL, n_other_steps integer NOT NULL, n_verdicts integer NOT NULL
    )
    """,
    "CREATE INDEX runs_started ON runs (started_at)",
    "CREATE INDEX runs_dataset ON runs (dataset, case_id)",
    "CREATE INDEX runs_agent ON runs (agent, agent_version)",
    steps_view(
        text="json_extract(e.payload, '$.{}')",
        r_text="json_extract(r.payload, '$.{}')",
        event_id="e.event_id",
        float="real",
        returned="""LEFT JOIN events r ON r.event_id = (
            SELECT r2.event_id FROM events r2
            WHERE e.kind = 'tool.called' AND r2.trace_id = e.trace_id
              AND r2.kind = 'tool.returned'
              AND json_extract(r2.payload, '$.call_id') = json_extract(e.payload, '$.call_id')
            ORDER BY r2.seq LIMIT 1) AND r.trace_id = e.trace_id""",
    ),
    """
    CREATE TABLE verdicts (
        verdict_id text PRIMARY KEY,
        trace_id text NOT NULL, subject_span_id text,
        scorer text NOT NULL, scorer_version text NOT NULL, input_hash text NOT NULL,
        passed integer, score real, label text, failure_type text, rationale text,
        details text NOT NULL, judge_trace_id text, ts text NOT NULL
    )
    """,
    "CREATE INDEX verdicts_subject ON verdicts (trace_id, scorer, scorer_version, ts)",
    "CREATE INDEX verdicts_scorer ON verdicts (scorer, scorer_version)",
    """
    CREATE VIEW verdicts_latest AS
    SELECT * FROM (
        SELECT v.*, row_number() OVER (
            PARTITION BY trace_id, scorer, scorer_version, coalesce(subject_span_id, '')
            ORDER BY ts DESC, verdict_id DESC) AS rn
        FROM verdicts v)
    WHERE rn = 1
    """,
    """
    CREATE TABLE datasets (
        name text NOT NULL, version text NOT NULL, description text,
        content_hash text NOT NULL, n_cases integer NOT NULL,
        created_at text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        PRIMARY KEY (name, version)
    )
    """,
    """
    CREATE TABLE cases (
        dataset text NOT NULL, dataset_version text NOT NULL, case_id text NOT NULL,
        ordinal integer NOT NULL, question_type text, group_id text, data text NOT NULL,
        PRIMARY KEY (dataset, dataset_version, case_id),
        FOREIGN KEY (dataset, dataset_version) REFERENCES datasets (name, version)
    )
    """,
    """
    CREATE TRIGGER datasets_no_update BEFORE UPDATE ON datasets
    BEGIN SELECT RAISE(ABORT, 'agentdocket: UPDATE on table datasets refused: immutable'); END
    """,
    """
    CREATE TRIGGER cases_no_update BEFORE UPDATE ON cases
    BEGIN SELECT RAISE(ABORT, 'agentdocket: UPDATE on table cases refused: immutable'); END
    """,
    """
    CREATE TRIGGER cases_no_delete BEFORE DELETE ON cases
    BEGIN SELECT RAISE(ABORT, 'agentdocket: DELETE on table cases refused: immutable'); END
    """,
    """
    CREATE TRIGGER datasets_no_delete BEFORE DELETE ON datasets
    BEGIN SELECT RAISE(ABORT, 'agentdocket: DELETE on table datasets refused: immutable'); END
    """,
]

SQLITE_DOWN = [
    "DROP TABLE cases",
    "DROP TABLE datasets",
    "DROP VIEW verdicts_latest",
    "DROP TABLE verdicts",
    "DROP VIEW steps",
    "DROP TABLE runs",
    "DROP TABLE events",
]


def _run(statements: list[str]) -> None:
    for statement in statements:
        op.execute(statement)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _run(POSTGRES_UP)
    else:
        _run(SQLITE_UP)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _run(POSTGRES_DOWN)
    else:
        _run(SQLITE_DOWN)
