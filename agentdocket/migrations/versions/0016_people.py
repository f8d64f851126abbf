"""People in the loop: rubrics, annotators and annotation queues.

People's labels are events of the log (kind ``label``, in the trace of the run they are
about); this revision adds what is not a fact about a run:

- ``rubrics``: what annotators are asked, immutable per (name, version) like datasets;
- ``annotators``: each person who labels in a queue, with a digest of their sign-in token
  (never the token);
- ``queues``, ``queue_items``, ``queue_members``: a queue's rubrics, how many annotators each
  item gets, the runs it holds (in the order they are handed out) and who may label them;
- ``queue_claims``: which annotator holds which item now, so that two annotators are not
  handed an item only one more label is wanted for (state, not facts: rows come and go);
- ``events_labels``: a partial index on the log's label events, so that reading labels does
  not scan the log.

No foreign keys: on a Citus cluster these tables stay on the coordinator, where keys are
kept among reference tables only; ``Queues.create`` checks names in the transaction it writes.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

TABLES = """
CREATE TABLE rubrics (
    name text NOT NULL, version text NOT NULL, definition {json} NOT NULL,
    content_hash text NOT NULL, created_at {ts} NOT NULL,
    PRIMARY KEY (name, version)
);
CREATE TABLE annotators (
    name text PRIMARY KEY, token_hash text NOT NULL UNIQUE, created_at {ts} NOT NULL
);
CREATE TABLE queues (
    name text PRIMARY KEY, rubrics {json} NOT NULL, per_item integer NOT NULL,
    selection {json} NOT NULL, show_verdicts boolean NOT NULL, created_at {ts} NOT NULL
);
CREATE TABLE queue_items (
    queue text NOT NULL, position integer NOT NULL,
    trace_id text NOT NULL, PRIMARY KEY (queue, position), UNIQUE (queue, trace_id)
);
CREATE TABLE queue_members (
    queue text NOT NULL, annotator text NOT NULL, PRIMARY KEY (queue, annotator)
);
CREATE TABLE queue_claims (
    queue text NOT NULL, trace_id text NOT NULL, annotator text NOT NULL,
    claimed_at {ts} NOT NULL, PRIMARY KEY (queue, trace_id, annotator)
);
CREATE INDEX events_labels ON events (trace_id) WHERE kind = 'label'
"""
DROPPED = ("queue_claims", "queue_members", "queue_items", "queues", "annotators", "rubrics")


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    sql = TABLES.format(
        json="jsonb" if postgres else "text", ts="timestamptz" if postgres else "text"
    )
    for statement in sql.split(";"):
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP INDEX events_labels")
    for table in DROPPED:
        op.execute(f"DROP TABLE {table}")
