"""Stale hours marked by the store, not by triggers.

Migration 0005 marked the dashboards' stale hours with statement triggers on ``runs`` and
``verdicts`` that read transition tables. Citus does not run such triggers on a distributed
table, so the store marks the hours itself, in the transaction that writes the projections
(agentdocket.store.stale_hours), on every backend with rollups: one way of marking. This drops
the triggers and their functions; a downgrade makes them again as 0005 did.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import importlib

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

ROLLUPS = importlib.import_module("agentdocket.migrations.versions.0005_dashboard_rollups")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, event, _ in ROLLUPS.TRIGGERS:
        name = f"rollup_mark_{table}_{event.lower()}"
        op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS {name}()")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for (table, event, referencing), body in ROLLUPS.TRIGGERS.items():
        for statement in ROLLUPS.trigger_sql(table, event, referencing, body):
            op.execute(statement)
