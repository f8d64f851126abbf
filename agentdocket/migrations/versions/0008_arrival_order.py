"""Arrival order: each event's place in the log, for followers that score live traffic.

- ``events.position``: the order in which events were stored. PostgreSQL draws it from a
  sequence; SQLite (one writer at a time) has the appender number each batch after the last.
- ``events.tx`` (PostgreSQL): the id of the transaction that stored the event. Transactions
  commit out of the order their positions were drawn in, so a follower reads events in
  ``(tx, position)`` order and only those whose transaction is older than every transaction
  still running (``pg_snapshot_xmin``): nothing can later appear before what it has read.
- ``events.received_at``: when the event was stored (the scoring lag is measured from it).
  Events stored before this migration have none.
- ``scoring_cursors``: how far each follower has scored, one row per follower, moved forward
  only. Not part of the log: a cursor is a follower's state, not a fact about an agent.

Existing events get positions in (time, trace, event) order and the oldest transaction id,
so a new follower catches up on them first (this rewrites the table once).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SQLITE_NO_UPDATE = """
    CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'agentdocket: UPDATE on table events refused: it is append-only'); END
"""


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE SEQUENCE events_position_seq AS bigint")
        # Existing rows first, in time order, then the defaults for new ones. The append-only
        # triggers fire on UPDATE, so they are set aside for this one statement.
        op.execute("ALTER TABLE events ADD COLUMN position bigint")
        op.execute("ALTER TABLE events ADD COLUMN tx xid8")
        op.execute("ALTER TABLE events ADD COLUMN received_at timestamptz")
        op.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        op.execute(
            """
            UPDATE events e SET position = o.n, tx = '0'::xid8
            FROM (SELECT trace_id, event_id,
                         nextval('events_position_seq') AS n
                  FROM (SELECT trace_id, event_id FROM events
                        ORDER BY ts, trace_id, event_id) ordered) o
            WHERE e.trace_id = o.trace_id AND e.event_id = o.event_id
            """
        )
        op.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
        op.execute(
            "ALTER TABLE events ALTER COLUMN position SET DEFAULT nextval('events_position_seq'), "
            "ALTER COLUMN position SET NOT NULL, "
            "ALTER COLUMN tx SET DEFAULT pg_current_xact_id(), ALTER COLUMN tx SET NOT NULL, "
            "ALTER COLUMN received_at SET DEFAULT statement_timestamp()"
        )
        op.execute("ALTER SEQUENCE events_position_seq OWNED BY events.position")
        op.execute("CREATE INDEX events_arrival ON events (tx, position)")
        op.execute("CREATE INDEX events_received ON events USING brin (received_at)")
        op.execute(
            """
            CREATE TABLE scoring_cursors (
                follower text COLLATE "C" PRIMARY KEY,
                tx bigint NOT NULL, position bigint NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """
        )
    else:
        op.execute("ALTER TABLE events ADD COLUMN position INTEGER")
        op.execute("ALTER TABLE events ADD COLUMN received_at TEXT")
        op.execute("DROP TRIGGER events_no_update")
        op.execute(
            """
            UPDATE events SET position = o.n
            FROM (SELECT trace_id, event_id,
                         row_number() OVER (ORDER BY ts, trace_id, event_id) AS n
                  FROM events) o
            WHERE events.trace_id = o.trace_id AND events.event_id = o.event_id
            """
        )
        op.execute(SQLITE_NO_UPDATE)
        op.execute("CREATE UNIQUE INDEX events_arrival ON events (position)")
        op.execute(
            """
            CREATE TABLE scoring_cursors (
                follower text PRIMARY KEY,
                tx INTEGER NOT NULL, position INTEGER NOT NULL,
                updated_at TEXT NOT NULL
            )
            """
        )


def downgrade() -> None:
    op.execute("DROP TABLE scoring_cursors")
    op.execute("DROP INDEX events_arrival")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX events_received")
        op.execute(
            "ALTER TABLE events DROP COLUMN position, DROP COLUMN tx, DROP COLUMN received_at"
        )
        # the sequence, owned by the column, went with it
    else:
        op.execute("ALTER TABLE events DROP COLUMN position")
        op.execute("ALTER TABLE events DROP COLUMN received_at")
