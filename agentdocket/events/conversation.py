"""A conversation as session scorers read it: the turns of one session, each a trace, in the
order they started, with the case the conversation answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentdocket.events.cases import Case
from agentdocket.events.trace import Trace


@dataclass(frozen=True)
class Conversation:
    """One session: its id and its turns (runs), first to last."""

    session_id: str
    turns: tuple[Trace, ...]
    case: Case | None = None

    def __post_init__(self) -> None:
        if not self.turns:
            raise ValueError(f"session {self.session_id}: a conversation needs a turn")

    @property
    def last(self) -> Trace:
        """The last turn: a session verdict is kept on it, so a later turn is a new input."""
        return self.turns[-1]

    def user_messages(self) -> list[str]:
        """What the user said in each turn (its question; empty when none was recorded)."""
        return [t.question or "" for t in self.turns]

    def answers(self) -> list[str | None]:
        """The agent's answer in each turn (None: the turn gave none)."""
        return [t.response for t in self.turns]

    def transcript(self) -> list[dict[str, Any]]:
        """The chat history, turn by turn: ``{"role": "user" | "assistant", "content": ...}``;
        a turn that failed without an answer says so in the assistant's place."""
        out: list[dict[str, Any]] = []
        for turn in self.turns:
            if turn.question:
                out.append({"role": "user", "content": turn.question})
            answer = turn.response
            if answer is not None:
                out.append({"role": "assistant", "content": answer})
            elif turn.status == "error":
                error = turn.finished.error if turn.finished is not None else None
                out.append({"role": "assistant", "content": f"(failed: {error or 'error'})"})
        return out
