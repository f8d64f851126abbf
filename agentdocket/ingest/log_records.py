"""From OTLP log records to events: the GenAI conventions' content events, which some
instrumentations send as log records instead of on their spans.

A model call's records (those naming the same trace and span in one request) become one
``llm.messages`` event under that span, holding the call's input and output messages in record
order, and, when the model asked for tools, the ``plan`` its reply states, as a model call's
span gives it (the same event id, so a call whose span and records both state it stores it
once). The trace's other events join them by trace and span id when the trace is read, in
whichever order spans and records arrived. Read:

- the current form: ``gen_ai.client.inference.operation.details``, the messages and system
  instructions in its attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions``);
- the older form: a ``gen_ai.{system,user,assistant,tool}.message`` record per input message
  and a ``gen_ai.choice`` record per output, the message in the record's body.

An evaluation made elsewhere (``gen_ai.evaluation.result``) becomes a verdict about the run of
the span it names (:mod:`agentdocket.ingest.evaluations`); a guardrail's result and a tool
call's decision (``gen_ai.guardrail.result``, ``gen_ai.tool.call.decision``) the events
:mod:`agentdocket.ingest.decisions` makes of them, when the record names a span.

Other records (an application's own logs, records with no span to join) are acknowledged and
not kept: agentdocket is no log store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentdocket.events import Event, validate_payload
from agentdocket.ingest import attributes as A
from agentdocket.ingest import decisions
from agentdocket.ingest.conventions import messages as call_messages
from agentdocket.ingest.conventions.frameworks import FINAL_ANSWER_TOOLS
from agentdocket.ingest.conventions.genai import with_instructions
from agentdocket.ingest.decode import ts_of
from agentdocket.ingest.evaluations import EVALUATION_EVENT
from agentdocket.ingest.evaluations import check as check_evaluation
from agentdocket.ingest.evaluations import verdict as evaluation_verdict
from agentdocket.ingest.messages import bodies_messages, plan_steps
from agentdocket.ingest.otlp_logs import ReceivedLog
from agentdocket.ingest.otlp_values import OtlpDecodeError

CONTENT_EVENTS = frozenset(
    {*A.GEN_AI_MESSAGE_EVENTS, A.GEN_AI_CHOICE_EVENT, A.GEN_AI_DETAILS_EVENT}
)


def is_content(record: ReceivedLog) -> bool:
    """Whether the record is a GenAI content event of a span."""
    return record.event_name in CONTENT_EVENTS and bool(record.trace_id and record.span_id)


def logs_to_events(records: Iterable[ReceivedLog]) -> list[Event]:
    """The events of a request's log records; an evaluation record that does not say what it
    must fails the request (:class:`OtlpDecodeError` naming its place)."""
    calls: dict[tuple[str, str], list[ReceivedLog]] = {}
    out: list[Event] = []
    for record in records:
        if is_content(record):
            calls.setdefault((record.trace_id, record.span_id), []).append(record)
        elif record.event_name == EVALUATION_EVENT:
            out.append(_evaluation(record))
        elif record.event_name in decisions.EVENTS and record.trace_id and record.span_id:
            out.extend(
                decisions.events_of(
                    record.event_name,
                    record.trace_id,
                    record.span_id,
                    record.attributes,
                    record.time,
                )
            )
    for (trace_id, span_id), found in calls.items():
        out.extend(_call_events(trace_id, span_id, found))
    return out


def _evaluation(record: ReceivedLog) -> Event:
    problem = check_evaluation(record.attributes)
    if problem is None and not (record.trace_id and record.span_id):
        problem = f"{EVALUATION_EVENT} names no span (traceId and spanId) to judge"
    if problem is not None:
        raise OtlpDecodeError(f"{record.where}: {problem}")
    return evaluation_verdict(record.trace_id, record.span_id, record.attributes, record.time)


def _call_events(trace_id: str, span_id: str, records: list[ReceivedLog]) -> list[Event]:
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    older = [
        (r.event_name, r.body if isinstance(r.body, Mapping) else {"content": r.body})
        for r in records
        if r.event_name != A.GEN_AI_DETAILS_EVENT
    ]
    older_in, older_out = bodies_messages(older)
    for record in records:
        if record.event_name == A.GEN_AI_DETAILS_EVENT:
            attrs = record.attributes
            got_in = call_messages(attrs, "input")
            got_out = call_messages(attrs, "output")
            inputs += with_instructions(attrs, got_in)
            outputs += got_out
    inputs += older_in
    outputs += older_out
    if not inputs and not outputs:
        return []
    first = min(r.time for r in records)
    ts = ts_of(first)

    def event(kind: str, payload: dict[str, Any], index: int) -> Event:
        return Event.assemble(
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=None,
            seq=0,
            ts=ts,
            kind=kind,
            payload=validate_payload(kind, payload),
            index=index,
        )

    # A call's records may come in several requests (an exporter that sends each as it is
    # emitted): each group is an event of its own, named by its first record's time, so that a
    # request sent again is recognised and another group of the same call is not taken for it.
    messages = {"input_messages": inputs, "output_messages": outputs}
    events = [event("llm.messages", messages, first)]
    steps = [s for s in plan_steps(outputs) if s["tool"] not in FINAL_ANSWER_TOOLS]
    if steps:  # the id of the plan the call's span states, if it states one
        events.append(event("plan", {"steps": steps}, 0))
    return events
