"""Time partitions: a run and everything about it stored under the month it started.

Every row of ``events``, ``runs`` and ``verdicts`` carries ``run_month``, the first day (UTC)
of the month of its run's start. The appender gives a trace its month when its first events
are stored (the month of the earliest of them) and every later event of the trace, late
events and verdicts included, takes the month already stored. So a run never straddles two
months, and dropping a month removes whole runs.

PostgreSQL: the three tables are partitioned by range of ``run_month``, one partition a month
(``events_2026_11``, ``runs_2026_11``, ``verdicts_2026_11``), made by
``agentdocket_ensure_partitions(months date[])``: ``migrate`` and ``serve`` call it for the
months ahead, the appender for any month a batch needs that has none. Unique keys gain
``run_month`` (a partitioned table's unique index must hold its partition key): ``events``
(trace_id, event_id, run_month), ``runs`` (trace_id, run_month), ``verdicts`` (trace_id,
verdict_id, run_month). The append-only row trigger lives on the partitioned ``events`` and
PostgreSQL clones it onto every partition; the function gives each events partition its own
TRUNCATE trigger, which a parent's does not reach. The dashboards' stale-hour triggers stay
statement triggers on the parents.

The upgrade copies the existing rows into the partitioned tables (a trace's month is the
month of its earliest stored event), keeping positions and transaction ids, so followers'
cursors stay valid; the downgrade copies them back.

SQLite has no partitions: the column is there (retention deletes whole runs by it), indexed.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from agentdocket.migrations.ops import execute_as_written, sibling

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

PARTITIONED = ("events", "runs", "verdicts")
KEYS = {
    "events": ("trace_id", "event_id"),
    "runs": ("trace_id",),
    "verdicts": ("trace_id", "verdict_id"),
}
OLD_KEYS = {"events": "trace_id, event_id", "runs": "trace_id", "verdicts": "verdict_id"}
INDEXES = {
    "events": [
        "CREATE INDEX events_ts ON events USING brin (ts)",
        "CREATE INDEX events_arrival ON events (tx, position)",
        "CREATE INDEX events_received ON events USING brin (received_at)",
    ],
    "runs": [
        "CREATE INDEX runs_started ON runs (started_at)",
        "CREATE INDEX runs_dataset ON runs (dataset, case_id)",
        "CREATE INDEX runs_agent ON runs (agent, agent_version)",
        "CREATE INDEX runs_dashboard_time ON runs ((coalesce(started_at, first_ts)))",
        "CREATE STATISTICS runs_dashboard_agent ON (coalesce(agent, '(none)')) FROM runs",
        "CREATE STATISTICS runs_dashboard_dataset ON (coalesce(dataset, '(none)')) FROM runs",
    ],
    "verdicts": [
        "CREATE INDEX verdicts_subject ON verdicts (trace_id, scorer, scorer_version, ts)",
        "CREATE INDEX verdicts_scorer ON verdicts (scorer, scorer_version)",
    ],
}
APPEND_ONLY = [
    "CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events "
    "FOR EACH ROW EXECUTE FUNCTION agentdocket_refuse_change()",
    "CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events "
    "FOR EACH STATEMENT EXECUTE FUNCTION agentdocket_refuse_change()",
]
# The month of a time, as a date, whatever the session's time zone.
MONTH_FUNCTION = """
    CREATE FUNCTION agentdocket_month(t timestamptz) RETURNS date
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CAST(date_trunc('month', t AT TIME ZONE 'UTC') AS date)
"""
# Partitions for these months, where missing. It looks before it locks, so that the common
# call (every month already there) costs a catalog lookup and blocks nobody; creating takes
# a transaction-level advisory lock, so two processes never race to create the same one.
ENSURE_FUNCTION = """
    CREATE FUNCTION agentdocket_ensure_partitions(months date[]) RETURNS integer
    LANGUAGE plpgsql AS $$
    DECLARE
        m date;
        t text;
        part text;
        made integer := 0;
        locked boolean := false;
    BEGIN
        FOREACH m IN ARRAY months LOOP
            m := CAST(date_trunc('month', m) AS date);
            FOREACH t IN ARRAY ARRAY['events', 'runs', 'verdicts'] LOOP
                part := t || '_' || to_char(m, 'YYYY_MM');
                IF to_regclass(quote_ident(part)) IS NULL THEN
                    IF NOT locked THEN
                        PERFORM pg_advisory_xact_lock(1634166881, 1885434996);
                        locked := true;
                    END IF;
                    IF to_regclass(quote_ident(part)) IS NULL THEN
                        EXECUTE format(
                            'CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                            part, t, m, CAST(m + interval '1 month' AS date));
                        IF t = 'events' THEN
                            EXECUTE format(
                                'CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %I '
                                'FOR EACH STATEMENT EXECUTE FUNCTION agentdocket_refuse_change()',
                                part);
                        END IF;
                        made := made + 1;
                    END IF;
                END IF;
            END LOOP;
        END LOOP;
        RETURN made;
    END
    $$
"""
AHEAD = (
    "SELECT agentdocket_ensure_partitions(ARRAY(SELECT CAST(m AS date) FROM generate_series("
    "date_trunc('month', now() AT TIME ZONE 'UTC'), "
    "date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months', "
    "interval '1 month') m))"
)
MATCHED_RETURN = "r.trace_id = e.trace_id"  # in 0001's steps view (PostgreSQL)
SIBLING = "n.trace_id = v.trace_id"  # in 0007's verdicts_latest
DEAD_LETTERS_STATE = """
    CREATE VIEW dead_letters_state AS
    SELECT d.*, EXISTS (
        SELECT 1 FROM events e
        WHERE e.trace_id = d.trace_id AND e.event_id = d.event_id{as_uuid}
    ) AS resolved
    FROM dead_letters d
"""


def _views_up_again(postgres: bool, by_month: bool) -> None:
    """The views migrations made over these tables (dropped to move the tables). ``by_month``:
    a tool call's return and a verdict's later siblings are looked up in the run's own month
    (one partition, not every one)."""
    first = sibling("0001_event_log")
    statements = first.POSTGRES_UP if postgres else first.SQLITE_UP
    steps = next(s for s in statements if "CREATE VIEW steps" in s)
    latest = sibling("0007_derived_objects").LATEST
    if by_month:
        steps = steps.replace(MATCHED_RETURN, f"{MATCHED_RETURN} AND r.run_month = e.run_month")
        latest = latest.replace(SIBLING, f"{SIBLING} AND n.run_month = v.run_month")
    op.execute(steps)
    op.execute(latest)
    op.execute(DEAD_LETTERS_STATE.format(as_uuid="::uuid" if postgres else ""))


def _views_down() -> None:
    for view in ("dead_letters_state", "verdicts_latest", "steps"):
        op.execute(f"DROP VIEW {view}")


def _rollup_triggers(create: bool) -> None:
    rollups = sibling("0005_dashboard_rollups")
    for table, event, referencing in rollups.TRIGGERS:
        name = f"rollup_mark_{table}_{event.lower()}"
        if create:
            op.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {referencing} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
            )
        else:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")


def _set_aside(suffix: str) -> None:
    """Rename the three tables and their indexes out of the way (``events`` becomes
    ``events_<suffix>``), so that their successors can take the names."""
    for name in ("runs_dashboard_agent", "runs_dashboard_dataset"):
        op.execute(f"DROP STATISTICS {name}")  # made again on the successor
    for table in PARTITIONED:
        op.execute(f"ALTER TABLE {table} RENAME TO {table}_{suffix}")
        execute_as_written(
            f"""
            DO $$
            DECLARE i text;
            BEGIN
                FOR i IN SELECT c.relname FROM pg_index x
                         JOIN pg_class c ON c.oid = x.indexrelid
                         WHERE x.indrelid = '{table}_{suffix}'::regclass
                LOOP
                    EXECUTE format('ALTER INDEX %I RENAME TO %I', i, i || '_{suffix}');
                END LOOP;
            END $$
            """
        )


def _postgres_up() -> None:
    _views_down()
    _rollup_triggers(create=False)
    op.execute(MONTH_FUNCTION)
    op.execute("ALTER SEQUENCE events_position_seq OWNED BY NONE")
    _set_aside("unpartitioned")
    for table in PARTITIONED:
        key = ", ".join((*KEYS[table], "run_month"))
        op.execute(
            f"CREATE TABLE {table} (LIKE {table}_unpartitioned INCLUDING DEFAULTS, "
            f"run_month date NOT NULL, PRIMARY KEY ({key})) PARTITION BY RANGE (run_month)"
        )
    op.execute("ALTER SEQUENCE events_position_seq OWNED BY events.position")
    execute_as_written(ENSURE_FUNCTION)
    # Each trace's month: that of its earliest stored event.
    op.execute(
        "CREATE TEMP TABLE agentdocket_trace_months ON COMMIT DROP AS "
        "SELECT trace_id, agentdocket_month(min(ts)) AS run_month "
        "FROM events_unpartitioned GROUP BY trace_id"
    )
    op.execute("ALTER TABLE agentdocket_trace_months ADD PRIMARY KEY (trace_id)")
    op.execute(
        "SELECT agentdocket_ensure_partitions(ARRAY("
        "SELECT DISTINCT run_month FROM agentdocket_trace_months UNION "
        "SELECT DISTINCT agentdocket_month(coalesce(started_at, first_ts, now())) "
        "FROM runs_unpartitioned UNION "
        "SELECT DISTINCT agentdocket_month(ts) FROM verdicts_unpartitioned))"
    )
    op.execute(AHEAD)
    op.execute(
        "INSERT INTO events SELECT u.*, m.run_month FROM events_unpartitioned u "
        "JOIN agentdocket_trace_months m ON m.trace_id = u.trace_id"
    )
    op.execute(
        "INSERT INTO runs SELECT r.*, coalesce(m.run_month, "
        "agentdocket_month(coalesce(r.started_at, r.first_ts, now()))) "
        "FROM runs_unpartitioned r LEFT JOIN agentdocket_trace_months m "
        "ON m.trace_id = r.trace_id"
    )
    op.execute(
        "INSERT INTO verdicts SELECT v.*, coalesce(m.run_month, agentdocket_month(v.ts)) "
        "FROM verdicts_unpartitioned v LEFT JOIN agentdocket_trace_months m "
        "ON m.trace_id = v.trace_id"
    )
    for table in PARTITIONED:
        op.execute(f"DROP TABLE {table}_unpartitioned")
        for statement in INDEXES[table]:
            op.execute(statement)
    for statement in APPEND_ONLY:
        op.execute(statement)
    _rollup_triggers(create=True)
    _views_up_again(postgres=True, by_month=True)
    for table in PARTITIONED:
        op.execute(f"ANALYZE {table}")


def _postgres_down() -> None:
    _views_down()
    _rollup_triggers(create=False)
    op.execute("ALTER SEQUENCE events_position_seq OWNED BY NONE")
    _set_aside("partitioned")
    for table in PARTITIONED:
        op.execute(f"CREATE TABLE {table} (LIKE {table}_partitioned INCLUDING DEFAULTS)")
        op.execute(f"ALTER TABLE {table} DROP COLUMN run_month")
        op.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({OLD_KEYS[table]})")
        columns = [
            r[0]
            for r in op.get_bind()
            .exec_driver_sql(
                "SELECT attname FROM pg_attribute WHERE attrelid = %(t)s::regclass "
                "AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                {"t": table},
            )
            .fetchall()
        ]
        listed = ", ".join(columns)
        op.execute(f"INSERT INTO {table} ({listed}) SELECT {listed} FROM {table}_partitioned")
        op.execute(f"DROP TABLE {table}_partitioned")  # its partitions go with it
        for statement in INDEXES[table]:
            op.execute(statement)
    op.execute("ALTER SEQUENCE events_position_seq OWNED BY events.position")
    op.execute("DROP FUNCTION agentdocket_ensure_partitions(date[])")
    op.execute("DROP FUNCTION agentdocket_month(timestamptz)")
    for statement in APPEND_ONLY:
        op.execute(statement)
    _rollup_triggers(create=True)
    _views_up_again(postgres=True, by_month=False)


SQLITE_NO_UPDATE = """
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'agentdocket: UPDATE on table events refused: it is append-only'); END
"""
SQLITE_MONTH = "substr({}, 1, 7) || '-01'"


def _sqlite_up() -> None:
    for table in PARTITIONED:
        op.execute(f"ALTER TABLE {table} ADD COLUMN run_month TEXT")
    op.execute(
        "CREATE TEMP TABLE agentdocket_trace_months AS "
        f"SELECT trace_id, {SQLITE_MONTH.format('min(ts)')} AS run_month FROM events "
        "GROUP BY trace_id"
    )
    op.execute(
        "CREATE UNIQUE INDEX temp.agentdocket_trace_months_id "
        "ON agentdocket_trace_months (trace_id)"
    )
    op.execute("DROP TRIGGER events_no_update")  # set aside for this one statement
    op.execute(
        "UPDATE events SET run_month = m.run_month FROM agentdocket_trace_months m "
        "WHERE m.trace_id = events.trace_id"
    )
    op.execute(SQLITE_NO_UPDATE)
    started = SQLITE_MONTH.format("coalesce(started_at, first_ts)")
    op.execute(
        "UPDATE runs SET run_month = coalesce((SELECT m.run_month FROM agentdocket_trace_months m "
        f"WHERE m.trace_id = runs.trace_id), {started})"
    )
    op.execute(
        "UPDATE verdicts SET run_month = coalesce((SELECT m.run_month FROM "
        "agentdocket_trace_months m WHERE m.trace_id = verdicts.trace_id), "
        f"{SQLITE_MONTH.format('ts')})"
    )
    op.execute("DROP TABLE temp.agentdocket_trace_months")
    for table in PARTITIONED:
        op.execute(f"CREATE INDEX {table}_month ON {table} (run_month)")


def _sqlite_down() -> None:
    for table in PARTITIONED:
        op.execute(f"DROP INDEX {table}_month")
        op.execute(f"ALTER TABLE {table} DROP COLUMN run_month")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _postgres_up()
    else:
        _sqlite_up()


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _postgres_down()
    else:
        _sqlite_down()
