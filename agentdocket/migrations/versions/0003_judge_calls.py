"""The judge-call cache: a projection of the ``llm.called`` events that judges record.

A judge call is recorded as an ``llm.called`` event carrying ``attributes.judge_cache_key``, a
hash of model, prompt, temperature, sample index and attempt. ``judge_calls`` keeps the first
reply per key, so re-scoring serves identical calls from the store instead of calling the
model again; like every projection it is rebuilt from the events.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    ts = "timestamptz" if postgres else "text"
    real = "double precision" if postgres else "real"
    op.execute(
        f"""
        CREATE TABLE judge_calls (
            cache_key text{collate} PRIMARY KEY,
            trace_id text{collate} NOT NULL, event_id text NOT NULL,
            model text NOT NULL, temperature {real}, sample integer NOT NULL,
            reply text NOT NULL, ts {ts} NOT NULL
        )
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE judge_calls")
