"""From OpenTelemetry spans to events: a pure function, shared by the exporter and the receiver.

A span is recognised by ``agentdocket.kind`` (ours), else by the conventions it follows, read in
their order of precedence (:mod:`agentdocket.ingest.conventions`). Ours carry
``agentdocket.seq`` (their order within the run); foreign spans are ordered by time (seq 0, and
1 for the run's end so it sorts last). A span that cannot be mapped to its kind (foreign data
of an unexpected shape) is kept as a generic ``step`` event with the problem noted, never
dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentdocket.events import Event
from agentdocket.ingest import attributes as A
from agentdocket.ingest import decisions
from agentdocket.ingest.agents import names_below_roots, settings_below_roots
from agentdocket.ingest.conventions import (
    LLM,
    PLAN,
    RETRIEVAL,
    RUN,
    STEP,
    TOOL,
    carries_tool_call,
    kind_of,
)
from agentdocket.ingest.evaluations import EVALUATION_EVENT
from agentdocket.ingest.evaluations import check as check_evaluation
from agentdocket.ingest.evaluations import verdict as evaluation_verdict
from agentdocket.ingest.label_spans import label_events
from agentdocket.ingest.span_reader import RUN_SETTINGS, SpanLike, SpanReader

__all__ = ["RUN_SETTINGS", "SpanLike", "evaluations", "span_to_events", "spans_to_events"]


def spans_to_events(spans: Iterable[SpanLike], *, keep_unrecognized: bool = False) -> list[Event]:
    """The events of a batch of ended spans."""
    batch = list(spans)
    agents = names_below_roots(batch)
    below = settings_below_roots(batch, RUN_SETTINGS)
    out: list[Event] = []
    for span in batch:
        ctx = span.context
        agent = settings = None
        if span.parent is None and ctx is not None:  # what is found below is a root's
            key = (ctx.trace_id, ctx.span_id)
            agent, settings = agents.get(key), below.get(key)
        out.extend(
            span_to_events(
                span, keep_unrecognized=keep_unrecognized, agent=agent, settings=settings
            )
        )
    return out


def span_to_events(
    span: SpanLike,
    *,
    keep_unrecognized: bool = False,
    agent: str | None = None,
    settings: Mapping[str, str] | None = None,
) -> list[Event]:
    """The events of one span; ``agent``: the name an agent span below this root gives,
    ``settings``: the run settings a span below it carries (see
    :mod:`agentdocket.ingest.agents`)."""
    ctx = span.context
    if ctx is None or not ctx.is_valid:
        return []
    attrs = _plain_attributes(span)
    m = SpanReader(span, ctx, attrs, agent, settings)
    return _events_of(m, attrs, keep_unrecognized) + evaluations(span, m.trace_id, m.span_id)


def evaluations(span: SpanLike, trace_id: str, span_id: str) -> list[Event]:
    """The verdicts of the evaluations recorded on a span (``gen_ai.evaluation.result``
    events; :mod:`agentdocket.ingest.evaluations`), those that say what they must, and the
    decisions recorded on it (a guardrail's result, a tool call's decision;
    :mod:`agentdocket.ingest.decisions`)."""
    out = []
    for event in span.events or ():
        name = getattr(event, "name", None)
        if name != EVALUATION_EVENT and name not in decisions.EVENTS:
            continue
        attrs = getattr(event, "attributes", None) or {}
        time = getattr(event, "timestamp", None) or span.end_time or 0
        if name in decisions.EVENTS:
            out.extend(decisions.events_of(name, trace_id, span_id, attrs, time))
        elif check_evaluation(attrs) is None:  # the receiver refused the others already
            out.append(evaluation_verdict(trace_id, span_id, attrs, time))
    return out


def _events_of(m: SpanReader, attrs: Mapping[str, Any], keep_unrecognized: bool) -> list[Event]:
    kind = attrs.get(A.KIND)
    handler = _OURS.get(kind) if isinstance(kind, str) else None
    try:
        if handler is None:
            handler = _foreign_handler(m, keep_unrecognized)
            if handler is None:
                return []
        return handler(m)
    except Exception as exc:  # foreign data of any shape: kept, with the problem noted
        problem = f"{type(exc).__name__}: {exc}"
    try:
        return m.generic(problem=problem)
    except Exception:  # attributes no payload can hold: the step without them
        return m.generic(problem=problem, keep_attributes=False)


def _foreign_handler(m: SpanReader, keep_unrecognized: bool) -> Any:
    found = kind_of(m.span.name, m.attrs, getattr(m.span, "kind", None))
    if found in (RUN, STEP) and m.parent is not None and carries_tool_call(m.attrs):
        # a chain, workflow or task span below the root that names a tool and carries its
        # input records a tool call (the conventions' docs: "tool call")
        return SpanReader.tool
    if found == RUN:
        # A trace's root agent, workflow or chain is the run (LangChain's root is often a
        # chain, Google ADK's a workflow).
        return SpanReader.run if m.parent is None else SpanReader.generic
    handler = _FOREIGN.get(found) if found is not None else None
    if handler is not None:
        return handler
    if found is not None or keep_unrecognized:
        return SpanReader.generic
    return None


def _plain_attributes(span: SpanLike) -> dict[str, Any]:
    """The span's attributes as a plain dict (every lookup on the SDK's own attribute mapping
    costs about a microsecond: one copy, then dictionary lookups), with those of its GenAI
    ``gen_ai.client.inference.operation.details`` events where the span has none of its own
    (the current conventions' messages may travel there instead). A span with no events whose
    attributes are a plain dict (a received span's) gives that dict: the mapping only reads it."""
    given = span.attributes
    events = span.events
    if not events and type(given) is dict:  # a received span's: read, never changed
        return given
    attrs = dict(given or {})
    for event in events or ():
        if getattr(event, "name", None) == A.GEN_AI_DETAILS_EVENT:
            for key, value in (getattr(event, "attributes", None) or {}).items():
                attrs.setdefault(key, value)
    return attrs


_FOREIGN = {
    TOOL: SpanReader.tool,
    LLM: SpanReader.llm,
    RETRIEVAL: SpanReader.retrieval,
    PLAN: SpanReader.genai_plan,
}
_OURS = {
    "run": SpanReader.run,
    "plan": SpanReader.plan,
    "tool": SpanReader.tool,
    "sql": SpanReader.sql,
    "retrieval": SpanReader.retrieval,
    "llm": SpanReader.llm,
    "message": SpanReader.message,
    "response": SpanReader.response,
    "label": label_events,
}
