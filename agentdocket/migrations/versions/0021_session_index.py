"""Sessions found by an index: the runs of a conversation, in the order they started.

A session is the runs sharing ``attributes.conversation_id`` (issue 50). Listing, showing and
live-judging sessions read the runs projection grouped by that member, which no index covered:
every read scanned ``runs``. This partial expression index holds only the runs that are turns
of a conversation, by conversation id then start, so a session's turns and the sessions gone
idle are read from it. The expression is the one the store's queries use (``->>`` on
PostgreSQL and Citus, ``json_extract`` on SQLite), as an index on an expression serves only
queries that spell it the same way.

On PostgreSQL a second partial index holds the same runs by time (``coalesce(started_at,
first_ts)``, the dashboards' time): the sessions dashboard reads a time range's turns without
reading the runs of no conversation.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

MEMBER = {
    "postgresql": "(attributes->>'conversation_id')",
    "sqlite": "json_extract(attributes, '$.conversation_id')",
}


def upgrade() -> None:
    member = MEMBER[op.get_bind().dialect.name]
    op.execute(
        f"CREATE INDEX runs_conversation ON runs ({member}, started_at) WHERE {member} IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX runs_conversation")
