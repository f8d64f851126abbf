"""Derived objects leave the migrations; one definition of the latest verdict.

- The dashboards' views and the rollups' refresh function (migrations 0004, 0005 and 0006) are
  dropped here: ``agentdocket migrate`` now re-creates them from the running code after the
  migrations (:mod:`agentdocket.store.derived`), recording what it installed in
  ``derived_objects``. A scorer that changes its details needs no migration. The rollup tables,
  their stale-hour triggers and the helper functions stay: they hold or mark data.
- ``verdicts_latest`` (both databases) becomes an anti-join: a verdict is the latest of its
  run, step, scorer and version when no verdict of the same has a later (time, verdict id).
  Unlike the window function it replaces, a query that joins it to some runs probes the
  verdicts of those runs only, so the dashboards and rollups read it too, where they each had
  their own definition before.

The downgrade re-creates the objects of 0004-0006 as those migrations defined them.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

from agentdocket.migrations.ops import sibling

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

LATEST = """
    CREATE VIEW verdicts_latest AS
    SELECT v.* FROM verdicts v
    WHERE NOT EXISTS (
        SELECT 1 FROM verdicts n
        WHERE n.trace_id = v.trace_id AND n.scorer = v.scorer
          AND n.scorer_version = v.scorer_version
          AND coalesce(n.subject_span_id, '') = coalesce(v.subject_span_id, '')
          AND (n.ts > v.ts OR (n.ts = v.ts AND n.verdict_id > v.verdict_id)))
"""
# As migration 0001 wrote it (SQLite's subquery needs no alias).
WINDOW = """
    CREATE VIEW verdicts_latest AS
    SELECT * FROM (
        SELECT v.*, row_number() OVER (
            PARTITION BY trace_id, scorer, scorer_version, coalesce(subject_span_id, '')
            ORDER BY ts DESC, verdict_id DESC) AS rn
        FROM verdicts v){alias}
    WHERE rn = 1
"""
REFRESH = "FUNCTION agentdocket_refresh_rollups(timestamptz, timestamptz)"


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        views, rollups = sibling("0004_dashboard_views"), sibling("0005_dashboard_rollups")
        op.execute("DROP VIEW dashboard_dead_letters")
        for name in reversed(list(rollups.STATS)):
            op.execute(f"DROP VIEW {name}")
        op.execute(f"DROP {REFRESH}")
        for table in rollups.AGGREGATE:
            op.execute(f"DROP VIEW {table}_pending")
        for name in reversed(list(views.VIEWS)):
            op.execute(f"DROP VIEW {name}")
    op.execute("DROP VIEW verdicts_latest")
    op.execute(LATEST)
    op.execute(
        "CREATE TABLE derived_objects (position integer PRIMARY KEY, identity text NOT NULL, "
        "digest text NOT NULL, shared boolean NOT NULL)"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    op.execute("DROP TABLE derived_objects")
    op.execute("DROP VIEW verdicts_latest")
    op.execute(WINDOW.format(alias=" ranked" if postgres else ""))
    if not postgres:
        return
    views, rollups = sibling("0004_dashboard_views"), sibling("0005_dashboard_rollups")
    for name, body in views.VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS {body}")
    for table in rollups.AGGREGATE:
        op.execute(rollups._pending_view(table))
    op.execute(rollups._refresh_function())
    for name, (table, what) in rollups.STATS.items():
        op.execute(rollups._stats_view(name, table, what))
    op.execute(
        "CREATE VIEW dashboard_dead_letters AS "
        "SELECT received_at AS time, source, code, resolved FROM dead_letters_state"
    )
