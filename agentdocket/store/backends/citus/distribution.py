"""How the schema spreads over a Citus cluster (``migrate`` applies it there, see
:mod:`.ops`): which tables are distributed and by what, which are reference
tables, and which stay on the coordinator.

Citus shards a distributed table by one column and can only enforce a unique index that holds
that column; a join or a correlated lookup between two distributed tables runs on the workers
only when it equates their distribution columns (co-located joins). agentdocket keys the log
and its projections by ``trace_id``, so a run and everything about it live on one shard:

- distributed by ``trace_id``, co-located: ``events``, ``runs``, ``verdicts``,
  ``trace_months``;
- distributed by its own key: ``judge_calls`` (a cache looked up by ``cache_key``, joined to
  nothing);
- reference tables (small, copied to every worker, joinable with anything): ``datasets``,
  ``cases``;
- on the coordinator (small, written by one process, or read with the log through a lookup):
  the rest.

``tests/contract/test_distribution.py`` holds the live schema, its views and the store's own
queries to these rules; docs/operations.md says how to apply them and what has been tried.
"""

from __future__ import annotations

DISTRIBUTED = {
    "events": "trace_id",
    "runs": "trace_id",
    "verdicts": "trace_id",
    "trace_months": "trace_id",
    "judge_calls": "cache_key",
}
CO_LOCATED = frozenset(t for t, column in DISTRIBUTED.items() if column == "trace_id")
REFERENCE = frozenset({"datasets", "cases"})
COORDINATOR = frozenset(
    {
        "alembic_version",
        "derived_objects",
        "dead_letters",
        "scoring_cursors",
        "arrival_ledger",  # read with the coordinator's own snapshot (citus.recorder)
        "pipeline_samples",
        "scoring_samples",
        "rollup_stale",
        "rollup_runs",
        "rollup_latency",
        "rollup_verdicts",
        "rollup_measures",
        "rollup_transitions",
        "rollup_experiments",  # migration 0018
        # people in the loop (migration 0016): small, read by trace id from the log apart
        "rubrics",
        "annotators",
        "queues",
        "queue_items",
        "queue_members",
        "queue_claims",
        # what model calls cost (migration 0017): rebuilt whole by `costs refresh`
        "call_costs",
        "rollup_costs",
    }
)


def placements() -> list[tuple[str, str]]:
    """Each table Citus places, with the statement that places it, in the order to run them
    (reference tables first, datasets before the cases that refer to it: distributed tables
    may refer to them)."""
    out = [(t, f"SELECT create_reference_table('{t}')") for t in ("datasets", "cases")]
    for table, column in DISTRIBUTED.items():
        colocate = ", colocate_with => 'events'" if table in CO_LOCATED - {"events"} else ""
        out.append((table, f"SELECT create_distributed_table('{table}', '{column}'{colocate})"))
    return out


def citus_sql() -> list[str]:
    """The statements that distribute a migrated, still empty agentdocket database on Citus."""
    return [statement for _, statement in placements()]
