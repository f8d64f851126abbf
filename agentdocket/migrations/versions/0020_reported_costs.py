"""What a call's span reported it cost, beside what agentdocket computed.

The GenAI conventions let a span carry the provider's own figure for a model call
(``gen_ai.usage.cost.amount``, ``.currency``, ``.source``); Langfuse's and OpenInference's
instrumentations carry theirs. ``call_costs`` keeps it (``reported_cost``,
``reported_currency``, ``reported_source``) beside the computed ``cost``, never in its place,
and ``rollup_costs`` adds up the reported US dollars and how many calls reported any
(``reported``, ``reported_calls``), so that the costs dashboard can show both and their
difference. Both tables are projections that ``costs refresh`` rebuilds; the pricing rules
changed with this revision, so the next refresh prices every call again and fills them.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

CALL_COLUMNS = (
    ("reported_cost", "double precision"),
    ("reported_currency", "text"),
    ("reported_source", "text"),
)
HOUR_COLUMNS = (
    ("reported", "double precision NOT NULL DEFAULT 0"),
    ("reported_calls", "bigint NOT NULL DEFAULT 0"),
)


def upgrade() -> None:
    for name, kind in CALL_COLUMNS:
        op.execute(f"ALTER TABLE call_costs ADD COLUMN {name} {kind}")
    for name, kind in HOUR_COLUMNS:
        op.execute(f"ALTER TABLE rollup_costs ADD COLUMN {name} {kind}")


def downgrade() -> None:
    for name, _ in reversed(HOUR_COLUMNS):
        op.execute(f"ALTER TABLE rollup_costs DROP COLUMN {name}")
    for name, _ in reversed(CALL_COLUMNS):
        op.execute(f"ALTER TABLE call_costs DROP COLUMN {name}")
