"""Arrival ledger: how many events each transaction stored, for followers on Citus.

A follower reads events of transactions older than every transaction still running
(migration 0008). On a Citus coordinator that is the coordinator's view only: a transaction
that wrote to several workers commits on the coordinator first and on the workers a moment
later (two-phase commit), so for that moment its events are not yet visible there while a
later transaction's may be. ``arrival_ledger`` (on the coordinator, written in the same
transaction as the events) says how many events each transaction stored; a follower on Citus
takes a transaction as settled only once that many are visible
(agentdocket.store.citus_arrivals). A single PostgreSQL server does not write it. Rows older
than a day are dropped by ``agentdocket retention``.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE TABLE arrival_ledger (tx xid8 PRIMARY KEY DEFAULT pg_current_xact_id(), "
        "events bigint NOT NULL, at timestamptz NOT NULL DEFAULT statement_timestamp())"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TABLE arrival_ledger")
