"""Verdicts no longer count into runs: a run row describes what the agent did.

Scoring a run months later must not move its ``last_ts`` or rewrite its row, and re-scoring
100k runs should append verdicts without upserting 100k run rows. ``runs.n_verdicts`` goes;
the ``verdicts`` projection holds the counts. Downgrading puts the column back, filled from
``verdicts``.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN n_verdicts")


def downgrade() -> None:
    # A projection, not the event log: refilling it here is what `rebuild` would do.
    op.execute("ALTER TABLE runs ADD COLUMN n_verdicts integer NOT NULL DEFAULT 0")
    op.execute(
        "UPDATE runs SET n_verdicts = "
        "(SELECT count(*) FROM verdicts v WHERE v.trace_id = runs.trace_id)"
    )
