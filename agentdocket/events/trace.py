"""A trace as scorers read it: the run's events in order, with its case."""

from __future__ import annotations

import hashlib
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
from agentdocket.events.readings import answer_candidate, best, final_text, question_candidate

_CALLED, _RETURNED = ToolCalled.KIND, ToolReturned.KIND
# a GenAI tool-call decision (agentdocket.ingest.decisions): a step, under the span it was
# recorded on, with a tool.called of its own for a call that did not run
DECISION_STEP = "gen_ai.tool.call.decision"
DECISION_OUTCOME = "gen_ai.tool.call.decision.outcome"
DECISION_CALL_ID = "gen_ai.tool.call.id"
NOT_RUN = {"deny": "denied", "require_approval": "awaiting_approval"}


def decision_span(trace_id: str, call_id: str) -> str:
    """The span id of the events the decisions on tool call ``call_id`` become: its decision
    steps, and the tool.called of a call that did not run (one per call, however many
    decisions), known by it whichever events a trace holds."""
    return hashlib.sha256(f"decision/{trace_id}/{call_id}".encode()).hexdigest()[:16]


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
    decision: str | None = None  # a recorded decision on the call: allow, deny, require_approval

    @property
    def status(self) -> str:
        """``ok`` or ``error`` for a call that returned; ``denied`` or ``awaiting_approval``
        for one a decision kept from running (not an error); else ``running``."""
        if self.returned:
            return "error" if self.error is not None else "ok"
        return NOT_RUN.get(self.decision or "", "running")


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
        """All planned steps in order (an iterative agent plans one step at a time). A plan of
        no steps and no text (a GenAI ``plan`` span's) is its model call's reply: that call's
        tool calls are its steps already (the call's own plan), a reply in words one step of
        that text."""
        plans = [e for e in self.events if e.kind == "plan"]
        if all(e.payload["steps"] for e in plans):  # each states its steps
            return [_step(step) for e in plans for step in e.payload["steps"]]
        out = []
        for e in plans:
            steps = e.payload["steps"]
            if not steps and e.payload.get("text") is None:
                text = self.reply_below(e.span_id)
                if text is not None:
                    out.append(PlanStep(text=text))
            out += [_step(step) for step in steps]
        return out

    def reply_below(self, span_id: str) -> str | None:
        """The final text of the last model call directly below span ``span_id``: its own
        output messages, else those recorded apart from it (``llm.messages``)."""
        calls = [
            e.span_id for e in self.events if e.kind == "llm.called" and e.parent_span_id == span_id
        ]
        found = None
        for e in self.events:
            if e.span_id in calls and e.kind in ("llm.called", "llm.messages"):
                found = final_text(e.payload.get("output_messages") or []) or found
        return found

    def tool_calls(self) -> list[ToolCall]:
        """Executed tool calls in call order, each joined with its return."""
        executed, returns, decided = self._executed(with_returns=True)
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
                    decision=decided.get(e.payload["call_id"]),
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
    ) -> tuple[list[tuple[Event, dict[str, Any] | str]], list[Mapping[str, Any]], dict[str, str]]:
        """The tool.called events in trace order, each with its arguments (a call recorded
        with a bare value takes its model's named arguments, see :func:`_requested`), the
        tool.returned payloads in trace order and the decisions on calls, by call id (the
        last; when asked for). One pass over the events."""
        plans: list[Mapping[str, Any]] = []
        called: list[Event] = []
        returns: list[Mapping[str, Any]] = []
        decided: dict[str, str] = {}
        for e in self.events:
            kind = e.kind
            if kind == _CALLED:
                called.append(e)
            elif kind == _RETURNED:
                if with_returns:
                    returns.append(e.payload)
            elif kind == "plan":
                plans.append(e.payload)
            elif kind == "step" and with_returns and e.payload.get("name") == DECISION_STEP:
                attributes = e.payload.get("attributes") or {}
                call_id = attributes.get(DECISION_CALL_ID)
                outcome = attributes.get(DECISION_OUTCOME)
                if call_id is not None and isinstance(outcome, str):
                    decided[str(call_id)] = outcome
        ids = {e.payload["call_id"] for e in called}
        requested, unclaimed = _requested(plans, ids)
        executed = []
        for e in _ran_once(called, ids):
            payload = e.payload
            arguments = payload.get("arguments", {})
            if not isinstance(arguments, dict):
                if payload["call_id"] in requested:
                    arguments = requested[payload["call_id"]]
                elif unclaimed.get(payload["tool"]):
                    # a call recorded without the model's id: the first such step of its tool
                    arguments = unclaimed[payload["tool"]].pop(0)
            executed.append((e, arguments))
        return executed, returns, decided

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


def _step(step: Mapping[str, Any]) -> PlanStep:
    return PlanStep(
        tool=step.get("tool"),
        text=step.get("text"),
        arguments=step.get("arguments"),
        call_id=step.get("call_id"),
    )


def _ran_once(called: list[Event], ids: set[str]) -> list[Event]:
    """The tool.called events, that of a call a decision kept from running
    (:func:`decision_span`) once, and not at all when a tool span names the same call: it ran
    after all."""
    if len(ids) == len(called):  # no call recorded twice
        return called
    seen: dict[str, int] = {}
    for e in called:
        seen[e.payload["call_id"]] = seen.get(e.payload["call_id"], 0) + 1
    decided = {
        id(e)
        for e in called
        if seen[e.payload["call_id"]] > 1
        and e.span_id == decision_span(e.trace_id, e.payload["call_id"])
    }
    ran = {e.payload["call_id"] for e in called if id(e) not in decided}
    out = []
    for e in called:
        if id(e) in decided:
            if e.payload["call_id"] in ran:
                continue
            ran.add(e.payload["call_id"])  # kept once
        out.append(e)
    return out


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
