"""Pipeline samples: what receivers and followers report of themselves, for the pipeline
dashboard.

- ``pipeline_samples``: ``agentdocket serve`` inserts one row every 15 seconds: the spool's
  size, files and the age of its oldest record, and the process's counts since it started
  (spans received, events stored, spooled, dead-lettered, spans dropped).
- ``scoring_samples``: a follower (``score --follow``, ``serve --score``) inserts one row every
  15 seconds: runs judged and verdicts added since it started, the scoring lag over the
  interval (median, 95th percentile, maximum), the finished runs and events behind its cursor,
  and runs a judge budget put off.

Grafana reads them through ``dashboard_pipeline_samples`` and ``dashboard_scoring_samples``, so
the pipeline's health shows without Prometheus and at any size of the log. Rows are only
inserted; a sample is a process's state, not part of the log.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    ts = "timestamptz" if postgres else "text"
    big = "bigint" if postgres else "INTEGER"
    real = "double precision" if postgres else "REAL"
    op.execute(
        f"""
        CREATE TABLE pipeline_samples (
            at {ts} NOT NULL, process text NOT NULL,
            spool_bytes {big} NOT NULL, spool_files {big} NOT NULL, spool_oldest_s {real},
            spans_received {big} NOT NULL, events_stored {big} NOT NULL,
            events_spooled {big} NOT NULL, events_dead_lettered {big} NOT NULL,
            spans_dropped {big} NOT NULL
        )
        """
    )
    op.execute(
        f"""
        CREATE TABLE scoring_samples (
            at {ts} NOT NULL, follower text NOT NULL, process text NOT NULL,
            runs_judged {big} NOT NULL, verdicts {big} NOT NULL, errors {big} NOT NULL,
            lag_p50_s {real}, lag_p95_s {real}, lag_max_s {real},
            behind_runs {big} NOT NULL, behind_events {big} NOT NULL, deferred {big} NOT NULL
        )
        """
    )
    using = "USING brin " if postgres else ""
    op.execute(f"CREATE INDEX pipeline_samples_at ON pipeline_samples {using}(at)")
    op.execute(f"CREATE INDEX scoring_samples_at ON scoring_samples {using}(at)")


def downgrade() -> None:
    op.execute("DROP TABLE scoring_samples")
    op.execute("DROP TABLE pipeline_samples")
