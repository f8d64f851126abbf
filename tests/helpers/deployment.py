"""What a deployment asks of its store, statement by statement: the work (scoring with the
rule-based scorers, reading runs, following the log, reports, retention's plan) and a cursor
that records every statement it runs with its parameters. The Citus tests check those
statements' joins (tests/contract/test_distribution.py) and their plans
(tests/contract/test_citus_plans.py)."""

from __future__ import annotations

from typing import Any, ClassVar

import psycopg

from agentdocket import scorers
from agentdocket.scorers.runner import score_runs
from agentdocket.store import Store
from agentdocket.store.arrivals import Position

RULES = ("planner.suffix_match", "tools.slot_fill", "tools.procedural", "interaction.metrics")


class Recording(psycopg.Cursor[Any]):
    """A cursor that keeps every statement it runs (the store's own queries, as sent), with
    its parameters."""

    seen: ClassVar[list[tuple[str, Any]]] = []

    def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
        text = query.as_string(self) if hasattr(query, "as_string") else query
        self.seen.append((text.decode() if isinstance(text, bytes) else str(text), params))
        return super().execute(query, params, **kw)


def work(store: Store) -> None:
    """What a deployment does: score (rule-based scorers), follow, read, report, retention."""
    score_runs(store, [scorers.get(n) for n in RULES], dataset="concerts-demo")
    runs = store.reader.list_runs(limit=5)
    for run in runs:
        store.reader.read_trace(str(run["trace_id"]))
    store.arrivals.after(Position(), 100)
    store.scoring.report_runs("concerts-demo")
    store.retention.plan("90d")


def recorded(store: Store) -> list[tuple[str, Any]]:
    """The statements (and parameters) :func:`work` runs on ``store``'s connection."""
    conn = store.recorder.connection
    before = conn.cursor_factory
    conn.cursor_factory = Recording
    Recording.seen = []
    try:
        work(store)
        return list(Recording.seen)
    finally:
        conn.cursor_factory = before
