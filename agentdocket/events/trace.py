"""A trace as scorers read it: the run's events in order, with its case."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, NamedTuple

from agentdocket.events.cases import Case
from agentdocket.events.model import Event
from agentdocket.events.payloads import (
    STEP_KINDS,
    PlanStep,
    RunFinished,
    RunStarted,
    SqlExecuted,
    ToolCalled,
    ToolReturned,
    Verdict,
)
from agentdocket.events.readings import answer_candidate, best, question_candidate

_CALLED, _RETURNED = ToolCalled.KIND, ToolReturned.KIND


def event_order(event: Event) -> tuple[int, Any, str]:
    """The order of events within a trace: seq, then time, then id (a total order)."""
    return (event.seq, event.ts, str(event.event_id))


def _ordered(events: Iterable[Event]) -> tuple[Event, ...]:
    """The events upcast, in :func:`event_order`. Events given with strictly increasing
    ``seq`` (as the store reads them) are in that order already: no keys are made."""
    upcast = [e.upcast() for e in events]
    if all(a.seq < b.seq for a, b in pairwise(upcast)):
        return tuple(upcast)
    return tuple(sorted(upcast, key=event_order))


@dataclass(frozen=True)
class ToolCall:
    """A tool.called joined with its tool.returned (when one arrived)."""

    call_id: str
    tool: str
    arguments: dict[str, Any] | str
    span_id: str
    result: Any = None
    error: str | None = None
    duration_ms: float | None = None
    returned: bool = False


class CallArguments(NamedTuple):
    """An executed tool call's request: its id, its tool, its arguments (as in
    :class:`ToolCall`)."""

    call_id: str
    tool: str
    arguments: dict[str, Any] | str


@dataclass(frozen=True)
class Trace:
    """One run: its events ordered by :func:`event_order`, upcast to current versions."""

    trace_id: str
    events: tuple[Event, ...]
    case: Case | None = None

    @classmethod
    def from_events(cls, events: Iterable[Event], case: Case | None = None) -> Trace:
        ordered = _ordered(events)
        if not ordered:
            raise ValueError("a trace needs at least one event")
        trace_ids = {e.trace_id for e in ordered}
        if len(trace_ids) != 1:
            raise ValueError(f"events of several traces given: {sorted(trace_ids)}")
        return cls(ordered[0].trace_id, ordered, case)

    @classmethod
    def partial(cls, trace_id: str, events: Iterable[Event], case: Case | None = None) -> Trace:
        """A trace holding only some of its events (those of the kinds a scorer reads); may be
        empty. Its ``status`` and ``steps`` only reflect the events it holds."""
        return cls(trace_id, _ordered(events), case)

    def of_kind(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    @property
    def started(self) -> RunStarted | None:
        found = self.of_kind(RunStarted.KIND)
        return found[0].data if found else None

    @property
    def finished(self) -> RunFinished | None:
        found = self.of_kind(RunFinished.KIND)
        return found[-1].data if found else None

    @property
    def status(self) -> str:
        finished = self.finished
        return finished.status if finished else "running"

    @property
    def steps(self) -> list[Event]:
        return [e for e in self.events if e.kind in STEP_KINDS]

    # The events' payloads are valid at their current version (checked when the event was
    # created, upcast when the trace was built), so the hot accessors below read them directly
    # instead of re-validating each through ``Event.data``.

    def plan(self) -> list[PlanStep]:
        """All planned steps in order (an iterative agent plans one step at a time)."""
        return [
            PlanStep(
                tool=step.get("tool"),
                text=step.get("text"),
                arguments=step.get("arguments"),
                call_id=step.get("call_id"),
            )
            for e in self.events
            if e.kind == "plan"
            for step in e.payload["steps"]
        ]

    def tool_calls(self) -> list[ToolCall]:
        """Executed tool calls in call order, each joined with its return."""
        executed, returns = self._executed(with_returns=True)
        returned: dict[str, Mapping[str, Any]] = {}
        for payload in returns:
            returned.setdefault(payload["call_id"], payload)
        calls = []
        for e, arguments in executed:
            ret = returned.get(e.payload["call_id"])
            calls.append(
                ToolCall(
                    call_id=e.payload["call_id"],
                    tool=e.payload["tool"],
                    arguments=arguments,
                    span_id=e.span_id,
                    result=ret.get("result") if ret else None,
                    error=ret.get("error") if ret else None,
                    duration_ms=ret.get("duration_ms") if ret else None,
                    returned=ret is not None,
                )
            )
        return calls

    def call_arguments(self) -> list[CallArguments]:
        """What :meth:`tool_calls` says of each call's request (id, tool, arguments), without
        joining the returns: for scorers that compare arguments only."""
        return [
            CallArguments(e.payload["call_id"], e.payload["tool"], arguments)
            for e, arguments in self._executed(with_returns=False)[0]
        ]

    def _executed(
        self, *, with_returns: bool
    ) -> tuple[list[tuple[Event, dict[str, Any] | str]], list[Mapping[str, Any]]]:
        """The tool.called events in trace order, each with its arguments (a call recorded
        with a bare value takes its model's named arguments, see :func:`_requested`), and the
        tool.returned payloads in trace order (when asked for). One pass over the events."""
        plans: list[Mapping[str, Any]] = []
        called: list[Event] = []
        returns: list[Mapping[str, Any]] = []
        for e in self.events:
            if e.kind == _CALLED:
                called.append(e)
            elif e.kind == _RETURNED:
                if with_returns:
                    returns.append(e.payload)
            elif e.kind == "plan":
                plans.append(e.payload)
        requested, unclaimed = _requested(plans, {e.payload["call_id"] for e in called})
        executed = []
        for e in called:
            payload = e.payload
            arguments = payload.get("arguments", {})
            if not isinstance(arguments, dict):
                if payload["call_id"] in requested:
                    arguments = requested[payload["call_id"]]
                elif unclaimed.get(payload["tool"]):
                    # a call recorded without the model's id: the first such step of its tool
                    arguments = unclaimed[payload["tool"]].pop(0)
            executed.append((e, arguments))
        return executed, returns

    def sql(self) -> list[SqlExecuted]:
        return [SqlExecuted(**e.payload) for e in self.of_kind(SqlExecuted.KIND)]

    @property
    def question(self) -> str | None:
        """The question, by :mod:`agentdocket.events.readings`' precedence: the run's own
        (``run.started``), else the last user message of its first model call that has one."""
        found = None
        for e in self.events:
            found = best(found, question_candidate(e))
        return None if found is None else found.text

    @property
    def response(self) -> str | None:
        """The final answer, by :mod:`agentdocket.events.readings`' precedence: the text of
        the last response event; in a run that recorded none, the final assistant text of its
        last model call (a reply that only calls tools is no answer)."""
        responses = [e for e in self.events if e.kind == "response"]
        if len(responses) == 1:  # it wins, whatever the model calls say: no keys to compare
            return str(responses[0].payload["text"])
        found = None
        for e in self.events:
            found = best(found, answer_candidate(e))
        return None if found is None else found.text

    def verdicts(self) -> list[Verdict]:
        return [e.data for e in self.of_kind(Verdict.KIND)]


def _requested(
    plans: list[Mapping[str, Any]], called_ids: set[str]
) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The named arguments the model gave its tool calls, in plan steps: by call id, and by
    tool those of steps no executed call names by id. Some instrumentations record a
    one-argument tool's input as the bare value (OpenInference's LangChain instrumentation
    does); the model's tool call with the same id, recorded as a plan step, still has them."""
    requested: dict[str, Any] = {}
    unclaimed: dict[str, list[Any]] = {}
    for plan in plans:
        for step in plan["steps"]:
            if not isinstance(step.get("arguments"), dict) or step.get("tool") is None:
                continue
            if step.get("call_id") is not None:
                requested[step["call_id"]] = step["arguments"]
            if step.get("call_id") not in called_ids:
                unclaimed.setdefault(step["tool"], []).append(step["arguments"])
    return requested, unclaimed
