"""Offline scorers: pure functions from a stored trace (with its case) to a verdict.

Their names are a contract: ``planner.suffix_match``, ``tools.slot_fill``, ``tools.procedural``,
``interaction.metrics``. A scorer does no I/O; the runner around it reads traces, batches them
and appends the verdicts.
"""

from __future__ import annotations

from agentdocket.scorers.base import Outcome, Scorer, get, register, scorers
from agentdocket.scorers.interaction import interaction_metrics
from agentdocket.scorers.tool_use import procedural, slot_fill, suffix_match

__all__ = ["Outcome", "Scorer", "get", "register", "scorers"]

TOOL_INPUTS = ("plan", "tool.called", "tool.returned", "case")

register(
    Scorer(
        "planner.suffix_match",
        "1",
        "the generated plan equals the expected plan or ends with it; details: extra steps",
        suffix_match,
        inputs=("plan", "case"),
    )
)
register(
    Scorer(
        "tools.slot_fill",
        "1",
        "every expected call matched by a distinct executed call with equal arguments "
        "(the case's rules), in any order",
        slot_fill,
        config={"similarity": "all-MiniLM-L6-v2"},
        inputs=("tool.called", "tool.returned", "case"),
    )
)
register(
    Scorer(
        "tools.procedural",
        "1",
        "overall procedural accuracy: planner.suffix_match and tools.slot_fill both pass",
        procedural,
        config={"similarity": "all-MiniLM-L6-v2"},
        inputs=TOOL_INPUTS,
    )
)
register(
    Scorer(
        "interaction.metrics",
        "1",
        "plan length (words), SQL generated, valid SQL (no error, rows returned), answer length",
        interaction_metrics,
        inputs=("plan", "sql.executed", "response"),
    )
)
