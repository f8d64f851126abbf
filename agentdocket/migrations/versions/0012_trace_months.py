"""Trace months: each trace's run month, by trace id.

A run's events, row and verdicts sit under its run month (migration 0010), the partition key
on PostgreSQL. A lookup by trace id alone (reading one run, the appender finding the month of
a trace it has stored before) used to probe every month's partition; ``trace_months`` gives the
month in one key probe, and the lookup then reads that month's partition only. The appender
writes a trace's row when it gives the trace its month, in the same transaction; retention
deletes a month's rows with the month. On Citus it is distributed by ``trace_id`` with the log.

The upgrade fills it from the stored runs, verdicts and events (a trace's month is the same in
all three); the downgrade drops it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    key = 'text COLLATE "C"' if postgres else "TEXT"
    month = "date" if postgres else "TEXT"
    op.execute(
        f"CREATE TABLE trace_months (trace_id {key} PRIMARY KEY, run_month {month} NOT NULL)"
    )
    op.execute("CREATE INDEX trace_months_month ON trace_months (run_month)")
    op.execute(
        "INSERT INTO trace_months (trace_id, run_month) "
        "SELECT trace_id, min(run_month) FROM ("
        "SELECT trace_id, run_month FROM runs UNION ALL "
        "SELECT trace_id, run_month FROM verdicts UNION ALL "
        "SELECT DISTINCT trace_id, run_month FROM events"
        ") t WHERE run_month IS NOT NULL GROUP BY trace_id"
    )


def downgrade() -> None:
    op.execute("DROP TABLE trace_months")
