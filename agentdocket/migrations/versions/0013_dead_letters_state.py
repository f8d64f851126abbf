"""Dead letters' state without a lookup per letter into the log.

``dead_letters_state`` told whether a letter's event has since been stored with a subquery
correlated on each letter, from the coordinator's ``dead_letters`` into the log; Citus does not
run such a subquery against a distributed log. The view now reads the letters' events from the
log first (one query, which Citus sends to the shards of those traces) and marks each letter
from that: the same rows on PostgreSQL and SQLite, and a plan Citus can run.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

STATE = """
CREATE VIEW dead_letters_state AS
WITH stored AS (
    SELECT e.trace_id, e.event_id{as_text} AS event_id FROM events e
    WHERE e.trace_id IN (SELECT trace_id FROM dead_letters WHERE trace_id IS NOT NULL)
)
SELECT d.*, EXISTS (
    SELECT 1 FROM stored s WHERE s.trace_id = d.trace_id AND s.event_id = d.event_id
) AS resolved
FROM dead_letters d
"""
BEFORE = """
CREATE VIEW dead_letters_state AS
SELECT d.*, EXISTS (
    SELECT 1 FROM events e
    WHERE e.trace_id = d.trace_id AND e.event_id = d.event_id{as_uuid}
) AS resolved
FROM dead_letters d
"""


def _postgres() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    op.execute("DROP VIEW dead_letters_state")
    op.execute(STATE.format(as_text="::text" if _postgres() else ""))


def downgrade() -> None:
    op.execute("DROP VIEW dead_letters_state")
    op.execute(BEFORE.format(as_uuid="::uuid" if _postgres() else ""))
