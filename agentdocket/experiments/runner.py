"""Experiment runs: an agent called on every case of a dataset (times ``repeat``), each call
recorded as a run linked to its experiment, case and repeat. A multi-turn case (scripted or
simulated user turns, :mod:`agentdocket.experiments.conversations`) is a conversation: each of
its turns a run, the conversation one session.

The agent is any callable taking the :class:`~agentdocket.events.Case` and returning its
answer, sync or async. Each call happens inside ``tracer.run(...)``: steps the agent records
with our API, and the spans of OpenTelemetry instrumentations inside it (OpenInference's
LangChain, LlamaIndex, ... on the global provider), are the run's. An exception or a timeout
makes an errored run and the experiment goes on. Runs already finished for the experiment are
not run again, so an interrupted experiment resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentdocket.errors import AgentdocketError
from agentdocket.events import Case, Dataset
from agentdocket.experiments.compare import selected
from agentdocket.experiments.conversations import (
    ConversationAgent,
    Ended,
    Message,
    agent_reply,
    check,
    limit,
    next_user_message,
    session_of,
)
from agentdocket.store import CaseRun
from agentdocket.tracer.api import Tracer

# the case (and, in a conversation, the messages so far) to the answer, sync or async
AgentFn = Callable[..., Any]


class AgentSpecError(AgentdocketError, ValueError):
    """``MODULE:ATTR`` that does not name a callable."""


def load_agent(spec: str) -> AgentFn:
    """The callable ``MODULE:ATTR`` names (``ATTR`` may be dotted)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise AgentSpecError(f"{spec!r}: give the agent as MODULE:ATTR (e.g. my_agent:answer)")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"{spec!r}: cannot import {module_name!r} ({exc})") from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise AgentSpecError(f"{spec!r}: {module_name} has no {attr!r}")
        found = getattr(found, part)
    if not callable(found):
        raise AgentSpecError(f"{spec!r}: {attr} is not callable")
    return found  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Experiment:
    """What to run: an agent (name and version) over a dataset version, ``repeat`` times per
    case, ``concurrency`` calls at once, each within ``timeout`` seconds (None: no limit)."""

    name: str
    dataset: Dataset
    agent: str
    agent_version: str
    repeat: int = 1
    concurrency: int = 1
    timeout: float | None = None

    def calls(self) -> list[tuple[Case, int]]:
        return [(case, r) for case in self.dataset.cases for r in range(self.repeat)]


def finished(runs: Iterable[CaseRun], experiment: str) -> set[tuple[str, int]]:
    """(case id, repeat) of the experiment's stored runs that finished (ok or errored)."""
    return {
        (str(r["case_id"]), int((r["attributes"] or {}).get("repeat", 0)))
        for r in selected(runs, f"experiment:{experiment}")
        if r["status"] is not None
    }


@dataclass
class Outcome:
    ran: int = 0  # calls of the agent: runs, and conversations as one each
    errored: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    turns: int = 0  # the turns of the conversations run
    ended: dict[str, int] = field(default_factory=dict)  # conversations by how they ended


async def _single(agent: AgentFn, case: Case) -> Any:
    if inspect.iscoroutinefunction(agent):
        return await agent(case)
    return await asyncio.to_thread(agent, case)  # the run's context goes along to the thread


async def _call(
    experiment: Experiment,
    tracer: Tracer,
    case: Case,
    repeat: int,
    call: Callable[[], Awaitable[Any]],
    turn: tuple[str, int, str] | None = None,
) -> tuple[str | None, str | None]:
    """One recorded call (a turn of session ``turn[0]``, its number and question, if given);
    its error if it failed, else its answer."""
    attributes: dict[str, Any] = {"experiment": experiment.name, "repeat": repeat}
    if turn is not None:
        attributes["turn"] = turn[1]
    with tracer.run(
        experiment.agent,
        agent_version=experiment.agent_version,
        case=case,
        dataset=experiment.dataset.name,
        dataset_version=experiment.dataset.version,
        attributes=attributes,
        conversation=turn[0] if turn is not None else None,
        question=turn[2] if turn is not None else None,
    ) as run:
        deadline = asyncio.timeout(experiment.timeout)
        try:
            async with deadline:
                answer = await call()
        except Exception as exc:  # the agent's failure is the run's, not the experiment's
            if isinstance(exc, TimeoutError) and deadline.expired():
                error = f"timed out after {experiment.timeout:g} s"
            else:  # the agent's own, a provider's timeout among them
                error = f"{type(exc).__name__}: {exc}"
            run.fail(error)
            return error, None
        text = None if answer is None else answer if isinstance(answer, str) else str(answer)
        if text is not None:
            run.respond(text)
        return None, text


async def _converse(
    experiment: Experiment,
    agent: ConversationAgent,
    tracer: Tracer,
    case: Case,
    repeat: int,
    user_model: Any,
    flush: Callable[[], object] | None,
) -> tuple[str | None, Ended]:
    """One conversation, turn by turn (each flushed as it ends); its error, if a turn
    failed, and how it ended."""
    session = session_of(experiment.name, case.case_id, repeat)
    assert case.question is not None  # checked before the experiment started
    messages: list[Message] = [{"role": "user", "content": case.question}]
    turn = 0
    while True:
        turn += 1
        said = list(messages)
        error, answer = await _call(
            experiment,
            tracer,
            case,
            repeat,
            functools.partial(agent_reply, agent, case, said),
            (session, turn, messages[-1]["content"]),
        )
        if flush is not None:
            await asyncio.to_thread(flush)
        if error is not None:
            return f"turn {turn}: {error}", Ended(turn, "error")
        messages.append({"role": "assistant", "content": answer or ""})
        following = await next_user_message(case, turn, messages, user_model)
        if following is None:
            if case.user is None:
                return None, Ended(turn, "scripted")
            return None, Ended(turn, "turn_limit" if turn >= limit(case) else "stop")
        messages.append({"role": "user", "content": following})


async def run_experiment(
    experiment: Experiment,
    agent: AgentFn,
    tracer: Tracer,
    done: set[tuple[str, int]],
    progress: Callable[[int, int], None] | None = None,
    flush: Callable[[], object] | None = None,
    user_model: Any = None,
) -> Outcome:
    """Call ``agent`` on every (case, repeat) not in ``done``, ``concurrency`` at a time;
    ``flush`` after each run (what is flushed is stored: an interruption loses only the calls
    under way). A multi-turn case is a conversation, ``user_model`` playing its simulated
    user; one that cannot be run is refused before anything runs. A conversation with a turn
    stored is not run again (an interrupted one stays as recorded, where it stopped)."""
    outcome = Outcome()
    todo = [(c, r) for c, r in experiment.calls() if (c.case_id, r) not in done]
    for case in {c.case_id: c for c, _ in todo if c.multi_turn}.values():
        check(case, agent, user_model)
    outcome.skipped = len(experiment.calls()) - len(todo)
    gate = asyncio.Semaphore(experiment.concurrency)
    count = 0

    async def one(case: Case, repeat: int) -> None:
        nonlocal count
        async with gate:
            if case.multi_turn:
                error, ended = await _converse(
                    experiment, agent, tracer, case, repeat, user_model, flush
                )
                outcome.turns += ended.turns
                outcome.ended[ended.reason] = outcome.ended.get(ended.reason, 0) + 1
            else:
                error, _ = await _call(
                    experiment, tracer, case, repeat, lambda: _single(agent, case)
                )
                if flush is not None:
                    await asyncio.to_thread(flush)
        outcome.ran += 1
        if error is not None:
            outcome.errored += 1
            outcome.errors.append(f"{case.case_id} #{repeat}: {error}")
        count += 1
        if progress is not None:
            progress(count, len(todo))

    await asyncio.gather(*(one(c, r) for c, r in todo))
    return outcome
