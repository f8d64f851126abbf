"""How foreign spans are read: one module per convention, and their precedence.

A span of agentdocket's own tracer (``agentdocket.kind``) is read as written. Any other span
is read by the conventions it follows; for every field the first convention that carries it
wins, in this order:

1. :mod:`~agentdocket.ingest.conventions.openinference` (``openinference.span.kind``,
   ``input.value``, ``llm.*``, ``tool.*``);
2. :mod:`~agentdocket.ingest.conventions.genai`: OpenTelemetry's GenAI conventions, current
   and older forms, and the MCP conventions beside them;
3. :mod:`~agentdocket.ingest.conventions.openllmetry` (Traceloop: ``traceloop.*``);
4. :mod:`~agentdocket.ingest.conventions.frameworks`: rules for one framework each, for the
   fields no convention carries, each named for its framework.

Each module says what kind of step a span is (:func:`kind_of`) and under which attributes
each field lies (:data:`FIELDS`); the mapping (:mod:`agentdocket.ingest.mapping`) builds the
events from what they read. ``docs/recording/conventions.md`` gives the same, field by field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdocket.ingest import attributes as A
from agentdocket.ingest.conventions import frameworks, genai, openinference, openllmetry
from agentdocket.ingest.conventions.kinds import LLM, PLAN, RETRIEVAL, RUN, STEP, TOOL

CONVENTIONS = (openinference, genai, openllmetry, frameworks)  # first to last

__all__ = [
    "CONVENTIONS",
    "FIELDS",
    "LLM",
    "PLAN",
    "RETRIEVAL",
    "RUN",
    "STEP",
    "TOOL",
    "carries_tool_call",
    "kind_of",
    "messages",
    "tool_arguments",
]
INPUT, OUTPUT = "input", "output"
_MESSAGE_KEYS = {
    INPUT: (A.LLM_INPUT_MESSAGES, A.GEN_AI_INPUT_MESSAGES, "prompt"),
    OUTPUT: (A.LLM_OUTPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, "completion"),
}


def _fields() -> dict[str, tuple[str, ...]]:
    names = [field for c in CONVENTIONS for field in c.FIELDS]
    return {
        field: tuple(key for c in CONVENTIONS for key in c.FIELDS.get(field, ()))
        for field in dict.fromkeys(names)
    }


# field -> the attributes that may carry it, in precedence order
FIELDS: dict[str, tuple[str, ...]] = _fields()


def kind_of(name: str, attrs: Mapping[str, Any], span_kind: Any) -> str | None:
    """The kind of step a foreign span is (:data:`RUN`: an agent, a workflow or a chain, the
    run when it is a trace's root; :data:`TOOL`; :data:`LLM`; :data:`RETRIEVAL`; :data:`STEP`:
    something a convention names but no event kind covers), by the first convention that
    says; None when none does."""
    for convention in CONVENTIONS:
        found: str | None = convention.kind(name, attrs, span_kind)
        if found is not None:
            return found
    return None


def carries_tool_call(attrs: Mapping[str, Any]) -> bool:
    """Whether a span the conventions call a chain, workflow, task or other step records a tool
    call all the same: it names the tool (a ``tool_name`` attribute: ``tool.name``,
    ``gen_ai.tool.name``) and carries its input (a ``tool_arguments`` one). OpenLLMetry's
    LlamaIndex instrumentation records a workflow agent's tool call only so (a ``task`` span
    with ``tool.name`` and ``tool.arguments``). A span below a run's root that does is read as
    the tool call (:func:`agentdocket.ingest.mapping.span_to_events`); a name alone (a step
    about a tool) or an input alone (any chain's) is not enough."""
    return any(attrs.get(k) is not None for k in FIELDS["tool_name"]) and any(
        attrs.get(k) is not None for k in FIELDS["tool_arguments"]
    )


def messages(attrs: Mapping[str, Any], direction: str) -> list[dict[str, Any]]:
    """A model call's ``input`` or ``output`` messages as its attributes carry them:
    OpenInference's flattened list, else GenAI's parts (or their older indexed form). The
    older event form is read from the span's events
    (:func:`agentdocket.ingest.messages.event_messages`)."""
    flattened, structured, older = _MESSAGE_KEYS[direction]
    return openinference.messages(attrs, flattened) or genai.messages(attrs, structured, older)


def tool_arguments(value: Any) -> tuple[Any, str | None]:
    """A tool's arguments as the tool received them, from the value recorded for them, and the
    model's call id where that value names it: OpenLLMetry's record of a LangChain tool's
    input, or a framework's keyword wrapper, unwrapped; any other value as it is."""
    if not isinstance(value, dict):
        return value, None
    found = openllmetry.tool_input(value)
    if found is not None:
        return found
    kwargs = frameworks.keyword_arguments(value)
    return (value if kwargs is None else kwargs), None
