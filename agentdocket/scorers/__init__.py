"""Offline scorers: pure functions from a stored trace (with its case) to a verdict.

Their names are a contract: ``planner.suffix_match``, ``tools.slot_fill``, ``tools.procedural``,
``response.similarity``, ``interaction.metrics``, ``answer.reference`` (an LLM judge). A scorer
does no I/O of its own; the runner around it (:mod:`agentdocket.scorers.runner`) reads traces,
batches them, calls judge models through its session and appends the verdicts.
"""

from __future__ import annotations

# Each scorer is declared beside its function (name, version, options, details, metrics); these
# imports register them.
from agentdocket.scorers import (  # noqa: F401
    exact,
    grammar,
    interaction,
    sessions,
    similarity,
    tool_use,
)
from agentdocket.scorers.base import (
    Option,
    Outcome,
    Scorer,
    get,
    latest,
    matching,
    register,
    scorers,
    shared_outcomes,
    unregister,
    with_options,
)
from agentdocket.scorers.judges import goal, peer, points, reference  # noqa: F401

__all__ = [
    "Option",
    "Outcome",
    "Scorer",
    "get",
    "latest",
    "matching",
    "register",
    "scorers",
    "shared_outcomes",
    "unregister",
    "with_options",
]
