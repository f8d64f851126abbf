"""The kinds of step the conventions tell apart (what :func:`kind_of` answers)."""

from typing import Final

RUN: Final = "run"  # an agent, workflow or chain: the run when it is a trace's root
TOOL: Final = "tool"
LLM: Final = "llm"
RETRIEVAL: Final = "retrieval"
PLAN: Final = "plan"  # an agent's planning: its plan is its model call's reply
STEP: Final = "step"  # named by a convention, kept as a generic step
