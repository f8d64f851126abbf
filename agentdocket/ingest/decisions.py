"""Decisions recorded beside an agent's work, as events of its run: the GenAI conventions'
``gen_ai.tool.call.decision`` and ``gen_ai.guardrail.result`` events (autumn 2026, both still
under review: semantic-conventions-genai #535 and #427), each on a span or as a log record
naming one.

- **A tool call's decision** (``gen_ai.tool.call.decision.outcome``: ``allow``, ``deny``,
  ``require_approval``, on the call ``gen_ai.tool.call.id`` names): a ``step`` named
  ``gen_ai.tool.call.decision`` with the event's attributes, under the span it was recorded on;
  a call that was denied or waits for approval is also a tool call of the run that did not run
  (a ``tool.called`` with no return, its arguments taken from the model's tool call with the
  same id when the trace is read): :class:`agentdocket.events.trace.ToolCall` says so in its
  ``decision`` and ``status``, never as an error. A call the decision let through is the tool's
  own span's; the decision annotates it. A denied call that ran after all (approved later: its
  tool span names the same id) is counted once, as the call that ran.
- **A guardrail's result** becomes an external verdict about the run, as an evaluation made
  elsewhere does (:mod:`agentdocket.ingest.evaluations`): scorer
  ``external.guardrail.{component name, else policy id, else provider}``, label
  ``{gen_ai.guardrail.result.type}={gen_ai.guardrail.result.value}`` as the provider gave it,
  score ``gen_ai.guardrail.risk.score``, rationale ``gen_ai.guardrail.result.reason``, the other
  attributes in its details. No pass or fail is derived: the conventions forbid inferring an
  allow or deny from a provider's result. The guardrail's own span (``apply_guardrail``) is a
  step, as any other operation with no event kind is.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from agentdocket.events import Event, validate_payload
from agentdocket.events.trace import decision_span
from agentdocket.ingest import attributes as A
from agentdocket.ingest.decode import attribute_json, ts_of

DECISION_EVENT = A.GEN_AI_DECISION_EVENT
GUARDRAIL_EVENT = A.GEN_AI_GUARDRAIL_EVENT
EVENTS = frozenset({DECISION_EVENT, GUARDRAIL_EVENT})
NOT_RUN = frozenset({"deny", "require_approval"})  # outcomes after which the tool did not run
GUARDRAIL = "gen_ai.guardrail."
RESULT_TYPE, RESULT_VALUE = GUARDRAIL + "result.type", GUARDRAIL + "result.value"
RESULT_REASON, RISK_SCORE = GUARDRAIL + "result.reason", GUARDRAIL + "risk.score"
_NAMES = (GUARDRAIL + "component.name", GUARDRAIL + "policy.id", A.GEN_AI_PROVIDER)


def events_of(
    name: str, trace_id: str, span_id: str, attributes: Mapping[str, Any], time_ns: int
) -> list[Event]:
    """The events of a decision event ``name`` recorded on span ``span_id`` at ``time_ns``
    (none for other events)."""
    if name == DECISION_EVENT:
        return _decision(trace_id, span_id, attributes, time_ns)
    if name == GUARDRAIL_EVENT:
        return [_guardrail(trace_id, span_id, attributes, time_ns)]
    return []


def _own_span(*parts: object) -> str:
    """The span id of the events a recorded event becomes: the same for the same event sent
    again, apart from its span's own events."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _decision(
    trace_id: str, span_id: str, attributes: Mapping[str, Any], time_ns: int
) -> list[Event]:
    outcome = attributes.get(A.GEN_AI_DECISION_OUTCOME)
    call_id = attributes.get(A.GEN_AI_TOOL_CALL_ID)
    tool = attributes.get(A.GEN_AI_TOOL_NAME)
    if call_id is not None:
        own = decision_span(trace_id, str(call_id))
    else:
        own = _own_span("decision", trace_id, span_id, outcome, time_ns)

    def event(kind: str, payload: dict[str, Any], index: int) -> Event:
        return Event.assemble(
            trace_id=trace_id,
            span_id=own,
            parent_span_id=span_id,
            seq=0,
            ts=ts_of(time_ns),
            kind=kind,
            payload=validate_payload(kind, payload),
            index=index,
        )

    step = {
        "name": DECISION_EVENT,
        "status": "ok",
        "attributes": {k: attribute_json(v) for k, v in attributes.items()},
    }
    out = [event("step", step, time_ns)]
    if (
        isinstance(outcome, str) and outcome in NOT_RUN and call_id is not None
    ):  # one per call, however many decisions
        called = {"call_id": str(call_id), "tool": str(tool or "unknown"), "arguments": ""}
        out.append(event("tool.called", called, 0))
    return out


def _guardrail(trace_id: str, span_id: str, attributes: Mapping[str, Any], time_ns: int) -> Event:
    name = next((str(attributes[k]) for k in _NAMES if attributes.get(k)), None)
    kind, value = attributes.get(RESULT_TYPE), attributes.get(RESULT_VALUE)
    label = None
    if value is not None:
        label = f"{kind}={value}" if kind is not None else str(value)
    given = attributes.get(RISK_SCORE)
    score = None
    if isinstance(given, int | float) and not isinstance(given, bool) and math.isfinite(given):
        score = float(given)
    reason = attributes.get(RESULT_REASON)
    details = {k: attribute_json(v) for k, v in attributes.items() if k != RESULT_REASON}
    details["span_id"] = span_id
    canonical = repr(sorted((k, repr(v)) for k, v in attributes.items()))
    failed = label is None and score is None and attributes.get(A.ERROR_TYPE)
    payload = {
        "scorer": "external.guardrail" + (f".{name}" if name else ""),
        "scorer_version": "external",
        "input_hash": hashlib.sha256(canonical.encode()).hexdigest(),
        "subject_trace_id": trace_id,
        "score": score,
        "label": label,
        "failure_type": "judge:error" if failed else None,
        "rationale": str(reason) if reason is not None else None,
        "details": details,
    }
    return Event.assemble(
        trace_id=trace_id,
        span_id=_own_span("guardrail", trace_id, span_id, canonical, time_ns),
        parent_span_id=None,
        seq=0,
        ts=ts_of(time_ns),
        kind="verdict",
        payload=validate_payload("verdict", {k: v for k, v in payload.items() if v is not None}),
        index=time_ns,
    )
