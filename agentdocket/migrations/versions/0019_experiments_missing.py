"""The experiments rollup counts what a run lacks: ``missing``, ``decided`` and ``passes``.

A run without an answer (the agent erred or timed out, gave no response, or the judge failed)
was a verdict with no rate in ``rollup_experiments``, so the experiments dashboard averaged it
away, as reports and comparisons did. Now each rollup row also counts its runs that are missing
an outcome, those with a pass or fail, and those that passed; an errored run is missing
whatever a scorer made of its partial trace, and its pass no longer counts in ``rated`` and
``rate_sum``. The dashboard gives a pass/fail scorer's rate over every judged run (a missing run
fails) and lists the flaky cases of repeated runs (some passed, some did not).

Every hour with runs is marked stale for verdicts, so that the next refresh counts them (the
dashboards read stale hours live until then).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

COLUMNS = ("missing", "decided", "passes")
EVERY_RUN_HOUR = (
    "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT "
    "agentdocket_hour(coalesce(started_at, first_ts)), 'verdicts' FROM runs "
    "WHERE coalesce(started_at, first_ts) IS NOT NULL"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in COLUMNS:
        op.execute(f"ALTER TABLE rollup_experiments ADD COLUMN {column} bigint NOT NULL DEFAULT 0")
    op.execute(EVERY_RUN_HOUR)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for column in reversed(COLUMNS):
        op.execute(f"ALTER TABLE rollup_experiments DROP COLUMN {column}")
    op.execute(EVERY_RUN_HOUR)
