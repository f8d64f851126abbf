"""The kinds of step the conventions tell apart (what :func:`kind_of` answers)."""

from collections.abc import Mapping
from typing import Any, Final

RUN: Final = "run"  # an agent, workflow or chain: the run when it is a trace's root
TOOL: Final = "tool"
LLM: Final = "llm"
RETRIEVAL: Final = "retrieval"
PLAN: Final = "plan"  # an agent's planning: its plan is its model call's reply
STEP: Final = "step"  # named by a convention, kept as a generic step


def named(found: Any, kinds: Mapping[str, str]) -> str | None:
    """The kind a convention's attribute value names (None: the span has no such attribute).
    A name it does not know, or a value of the wrong type (a list, a number: a client may send
    any), is a step of that convention, never an error."""
    if found is None:
        return None
    return kinds.get(found, STEP) if isinstance(found, str) else STEP
