"""Dead letters: the records the database refused, kept with their error and origin.

A record the database refuses (a value out of range, a violated constraint) is isolated from
its batch, which is stored without it, and kept here with its raw content (the event as JSON,
ASCII-only so that any text survives), the error and where it came from. Rows are only ever
inserted: a dead letter is resolved once its event is in the log (``agentdocket dead-letters
retry`` stores it when the cause is fixed), which ``dead_letters_state`` tells by a lookup.
``dashboard_dead_letters`` gives Grafana the counts (PostgreSQL).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

VIEWS = ("dashboard_dead_letters",)  # for Grafana (PostgreSQL)


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    ts = "timestamptz" if postgres else "text"
    as_uuid = "::uuid" if postgres else ""  # events.event_id is a uuid there
    op.execute(
        f"""
        CREATE TABLE dead_letters (
            letter_id text{collate} PRIMARY KEY,
            event_id text, trace_id text{collate},
            received_at {ts} NOT NULL,
            source text NOT NULL, error text NOT NULL, code text,
            raw text NOT NULL
        )
        """
    )
    op.execute("CREATE INDEX dead_letters_received ON dead_letters (received_at)")
    op.execute(
        f"""
        CREATE VIEW dead_letters_state AS
        SELECT d.*, EXISTS (
            SELECT 1 FROM events e
            WHERE e.trace_id = d.trace_id AND e.event_id = d.event_id{as_uuid}
        ) AS resolved
        FROM dead_letters d
        """
    )
    if postgres:
        op.execute(
            """
            CREATE VIEW dashboard_dead_letters AS
            SELECT received_at AS time, source, code, resolved FROM dead_letters_state
            """
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP VIEW dashboard_dead_letters")
    op.execute("DROP VIEW dead_letters_state")
    op.execute("DROP TABLE dead_letters")
