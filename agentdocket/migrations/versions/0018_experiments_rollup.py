"""The experiments rollup, and the dashboards' statistics on every month of runs.

- ``rollup_experiments``: per hour, dataset, selection (``experiment:NAME``, ``AGENT@VERSION``,
  ``AGENT``, as ``agentdocket compare`` names them), scorer, version, case and failure type,
  the latest run-level verdicts' count, how many have a rate (pass as 1 or 0, else the score),
  the sum of those rates, and the least trace id. The experiments dashboard reads it instead
  of every run's verdicts. It is a verdict rollup: refreshed and read like the others
  (agentdocket/dashboards/rollups.py). Every hour with runs is marked stale for verdicts, so
  the first refresh fills it (and the dashboards read those hours live until then).
- Extended statistics on each month's ``runs`` partition (``runs_2026_11_dashboard_agent``,
  ``..._dashboard_dataset``), on the expressions the dashboards filter runs by. Migration 0010
  made them on the partitioned table only, where the planner does not use them for a
  partition's scan: it took the filters on agent and dataset to keep a thousandth of a week's
  runs, and read every one of them for a table of the 50 newest failing ones (0.6-2 s at 10M
  events, against 8-16 ms once it knows). ``agentdocket_ensure_partitions`` now makes them for
  every new month.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from agentdocket.migrations.ops import execute_as_written, sibling

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

KEY = 'text COLLATE "C" NOT NULL'
TABLE = (
    f"CREATE TABLE rollup_experiments (hour timestamptz NOT NULL, dataset {KEY}, "
    f"selection {KEY}, scorer {KEY}, scorer_version {KEY}, case_id {KEY}, "
    'failure_type text COLLATE "C", verdicts bigint NOT NULL, rated bigint NOT NULL, '
    'rate_sum double precision, first_run text COLLATE "C" NOT NULL)'
)
INDEX = "CREATE INDEX rollup_experiments_pick ON rollup_experiments (dataset, selection, hour)"
STATISTICS = (
    ("dashboard_agent", "coalesce(agent, '(none)')"),
    ("dashboard_dataset", "coalesce(dataset, '(none)')"),
)
# As 0010's, and a new month of runs gets the statistics the dashboards' filters need.
ENSURE_FUNCTION = """
    CREATE OR REPLACE FUNCTION agentdocket_ensure_partitions(months date[]) RETURNS integer
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
                        ELSIF t = 'runs' THEN
                            EXECUTE format(
                                'CREATE STATISTICS %I ON (coalesce(agent, ''(none)'')) FROM %I',
                                part || '_dashboard_agent', part);
                            EXECUTE format(
                                'CREATE STATISTICS %I ON (coalesce(dataset, ''(none)'')) FROM %I',
                                part || '_dashboard_dataset', part);
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
EVERY_RUN_HOUR = (
    "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT "
    "agentdocket_hour(coalesce(started_at, first_ts)), 'verdicts' FROM runs "
    "WHERE coalesce(started_at, first_ts) IS NOT NULL"
)


def _months_of_runs() -> list[str]:
    rows = op.get_bind().exec_driver_sql(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'runs'::regclass ORDER BY 1"
    )
    return [str(r[0]) for r in rows]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(TABLE)
    op.execute(INDEX)
    execute_as_written(ENSURE_FUNCTION)
    for part in _months_of_runs():
        for suffix, expression in STATISTICS:
            op.execute(f"CREATE STATISTICS {part}_{suffix} ON ({expression}) FROM {part}")
        op.execute(f"ANALYZE {part}")
    op.execute(EVERY_RUN_HOUR)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for part in _months_of_runs():
        for suffix, _ in STATISTICS:
            op.execute(f"DROP STATISTICS IF EXISTS {part}_{suffix}")
    before = sibling("0010_time_partitions").ENSURE_FUNCTION
    execute_as_written(before.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    op.execute("DROP TABLE rollup_experiments")
