"""The error a judge raises when it has no model to ask."""

from __future__ import annotations

from agentdocket.errors import AgentdocketError


class JudgeUnavailable(AgentdocketError, RuntimeError):
    """No judge model is configured, or the one named cannot be loaded."""
