"""Experiment runs: an agent called on every case of a dataset (times ``repeat``), each call
recorded as a run linked to its experiment, case and repeat.

The agent is any callable taking the :class:`~agentdocket.events.Case` and returning its
answer, sync or async. Each call happens inside ``tracer.run(...)``: steps the agent records
with our API, and the spans of OpenTelemetry instrumentations inside it (OpenInference's
LangChain, LlamaIndex, ... on the global provider), are the run's. An exception or a timeout
makes an errored run and the experiment goes on. Runs already finished for the experiment are
not run again, so an interrupted experiment resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentdocket.errors import AgentdocketError
from agentdocket.events import Case, Dataset
from agentdocket.experiments.compare import selected
from agentdocket.store import CaseRun
from agentdocket.tracer.api import Tracer

AgentFn = Callable[[Case], Any]


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
    ran: int = 0
    errored: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)


async def _call(
    experiment: Experiment, agent: AgentFn, tracer: Tracer, case: Case, repeat: int
) -> str | None:
    """One recorded call; its error, if it failed."""
    with tracer.run(
        experiment.agent,
        agent_version=experiment.agent_version,
        case=case,
        dataset=experiment.dataset.name,
        dataset_version=experiment.dataset.version,
        attributes={"experiment": experiment.name, "repeat": repeat},
    ) as run:
        limit = asyncio.timeout(experiment.timeout)
        try:
            async with limit:
                if inspect.iscoroutinefunction(agent):
                    answer = await agent(case)
                else:  # the run's context goes along to the thread
                    answer = await asyncio.to_thread(agent, case)
        except Exception as exc:  # the agent's failure is the run's, not the experiment's
            if isinstance(exc, TimeoutError) and limit.expired():
                error = f"timed out after {experiment.timeout:g} s"
            else:  # the agent's own, a provider's timeout among them
                error = f"{type(exc).__name__}: {exc}"
            run.fail(error)
            return error
        if answer is not None:
            run.respond(answer if isinstance(answer, str) else str(answer))
        return None


async def run_experiment(
    experiment: Experiment,
    agent: AgentFn,
    tracer: Tracer,
    done: set[tuple[str, int]],
    progress: Callable[[int, int], None] | None = None,
    flush: Callable[[], object] | None = None,
) -> Outcome:
    """Call ``agent`` on every (case, repeat) not in ``done``, ``concurrency`` at a time;
    ``flush`` after each run (what is flushed is stored: an interruption loses only the calls
    under way)."""
    outcome = Outcome()
    todo = [(c, r) for c, r in experiment.calls() if (c.case_id, r) not in done]
    outcome.skipped = len(experiment.calls()) - len(todo)
    gate = asyncio.Semaphore(experiment.concurrency)
    count = 0

    async def one(case: Case, repeat: int) -> None:
        nonlocal count
        async with gate:
            error = await _call(experiment, agent, tracer, case, repeat)
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
