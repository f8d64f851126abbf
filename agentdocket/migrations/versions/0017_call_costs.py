"""What model calls cost: the ``call_costs`` projection.

One row per model call (an ``llm.called`` event): its model, provider, role, tokens and its
cost in US dollars under the prices that produced it (``priced_by``: the ``genai-prices``
version and any price file), or why it has none (``unpriced``); and its run's agent, version,
dataset and case (for a judge's call, the run it judged), so that what reads costs by them
needs no join. Costs are derived, never
facts of the log: ``agentdocket costs refresh`` recomputes every row when prices change.
``rollup_costs`` adds them up per hour, agent, version, dataset, model, role and judge (what
the costs dashboard reads), kept by the same transactions that write ``call_costs``.
``events_llm_calls`` is a partial index on the log's model calls, so that pricing them does
not read the rest of the log.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

TABLE = """
CREATE TABLE call_costs (
    event_id text PRIMARY KEY, trace_id text NOT NULL, ts {ts} NOT NULL, model text NOT NULL,
    provider text, role text, judge boolean NOT NULL, input_tokens bigint,
    output_tokens bigint, cache_read_tokens bigint, cache_creation_tokens bigint,
    cost double precision, priced_by text NOT NULL, rate text, unpriced text,
    agent text, agent_version text, dataset text, case_id text
);
CREATE INDEX call_costs_trace ON call_costs (trace_id);
CREATE TABLE rollup_costs (
    hour {ts} NOT NULL, agent text NOT NULL, agent_version text NOT NULL,
    dataset text NOT NULL, model text NOT NULL, role text NOT NULL, judge boolean NOT NULL,
    calls bigint NOT NULL, unpriced bigint NOT NULL, cost double precision NOT NULL,
    PRIMARY KEY (hour, agent, agent_version, dataset, model, role, judge)
);
CREATE INDEX call_costs_ts ON call_costs (ts);
CREATE INDEX events_llm_calls ON events (trace_id) WHERE kind = 'llm.called'
"""


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in TABLE.format(ts="timestamptz" if postgres else "text").split(";"):
        op.execute(statement)


def downgrade() -> None:
    op.execute("DROP INDEX events_llm_calls")
    op.execute("DROP TABLE rollup_costs")
    op.execute("DROP TABLE call_costs")
