"""Multi-turn cases in an experiment: the agent in conversation with scripted or simulated user
turns, every turn a run, the conversation one session.

The case's question opens. Then each of its ``user_turns`` follows, or, for a case with a
``user``, each reply of the simulated user: any langchain-core chat model, told the persona and
the goal, that reads the agent's answers as the other side of the chat and says the stop phrase
once the goal is reached. A conversation ends after the last scripted turn, at the stop phrase
(not sent to the agent), at the turn limit, or at a turn that failed.

The agent is a callable taking the case and the messages so far (``[{"role": "user" |
"assistant", "content": ...}]``, the last one the user's) and returning its reply, sync or
async.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentdocket.errors import AgentdocketError
from agentdocket.events import Case, SimulatedUser

Message = dict[str, str]
ConversationAgent = Callable[[Case, list[Message]], Any]


class ConversationError(AgentdocketError, ValueError):
    """A multi-turn case that cannot be run: no opening question, or an agent that does not
    take the messages so far, or no simulated user's model."""


@dataclass(frozen=True)
class Ended:
    """How a conversation ended: ``"scripted"`` (its last turn), ``"stop"`` (the simulated
    user's stop phrase), ``"turn_limit"``, or ``"error"`` (a turn failed)."""

    turns: int
    reason: str


def session_of(experiment: str, case_id: str, repeat: int) -> str:
    """The session id of a case's conversation in an experiment (one per repeat): ``compare``
    pairs the sessions of two experiments by case and repeat."""
    return f"{experiment}/{case_id}/{repeat}"


def check(case: Case, agent: Callable[..., Any], user_model: object | None) -> None:
    """Refuse a multi-turn case this run cannot drive, naming the case."""
    if not case.question:
        raise ConversationError(f"case {case.case_id}: a multi-turn case needs a question to open")
    try:
        inspect.signature(agent).bind(case, [])
    except TypeError:
        raise ConversationError(
            f"case {case.case_id} is a conversation: the agent must take (case, messages) and "
            "return its reply"
        ) from None
    except ValueError:
        pass  # no signature to read (a builtin): it is called and its own error reported
    if case.user is not None and user_model is None:
        raise ConversationError(
            f"case {case.case_id} has a simulated user: give its chat model (--user-model)"
        )


def limit(case: Case) -> int:
    """The most turns the agent gets."""
    if case.user is not None:
        return case.user.max_turns
    return 1 + len(case.user_turns)


def instructions(user: SimulatedUser) -> str:
    return (
        f"You are a user talking to an AI assistant. Who you are: {user.persona}\n"
        f"What you want: {user.goal}\n"
        "Write only your next message to the assistant, in your own words, one or two "
        "sentences. Answer its questions; do not do its work. When what you want is done, "
        f"reply with exactly {user.stop!r} and nothing else."
    )


def simulated_reply(model: Any, user: SimulatedUser, messages: list[Message]) -> str:
    """The simulated user's next message: the chat so far with the roles seen from the user's
    side (its own messages as the model's, the agent's as what it answers)."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

    chat: list[BaseMessage] = [SystemMessage(instructions(user))]
    for m in messages:
        chat.append(AIMessage(m["content"]) if m["role"] == "user" else HumanMessage(m["content"]))
    reply = model.invoke(chat)
    content = reply.content if isinstance(reply.content, str) else str(reply.content)
    return content.strip()


async def agent_reply(agent: ConversationAgent, case: Case, messages: list[Message]) -> Any:
    if inspect.iscoroutinefunction(agent):
        return await agent(case, list(messages))
    return await asyncio.to_thread(agent, case, list(messages))  # the run's context goes along


async def next_user_message(
    case: Case, turn: int, messages: list[Message], user_model: Any
) -> str | None:
    """What the user says after ``turn`` turns (None: the conversation is over)."""
    if turn >= limit(case):
        return None
    if case.user is None:
        return case.user_turns[turn - 1]
    reply = await asyncio.to_thread(simulated_reply, user_model, case.user, messages)
    if not reply or case.user.stop.casefold() in reply.casefold():
        return None
    return reply
