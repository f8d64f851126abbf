"""OpenLLMetry (Traceloop): ``traceloop.span.kind`` (``workflow``, ``agent``, ``task``,
``tool``), ``traceloop.entity.input`` / ``.output``, and association properties
(``traceloop.association.properties.*``) that carry a run's settings, as LangChain's
``config={"metadata": ...}`` sets them. Its GenAI attributes are read by the GenAI module."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from agentdocket.ingest import attributes as A
from agentdocket.ingest.conventions.kinds import RUN, STEP, TOOL, named

KINDS = {"workflow": RUN, "agent": RUN, "tool": TOOL, "task": STEP}
ASSOCIATION = A.TRACELOOP_ASSOCIATION  # + a run setting's name

FIELDS: dict[str, tuple[str, ...]] = {
    # its LlamaIndex instrumentation records a workflow agent's tool call as a task span with
    # tool.name (read as OpenInference's) and tool.arguments
    "tool_arguments": (A.TRACELOOP_ENTITY_INPUT, A.TOOL_ARGUMENTS),
    "tool_result": (A.TRACELOOP_ENTITY_OUTPUT,),
    # Its SDK sets gen_ai.conversation.id (read first, by the GenAI module); before it, a
    # session was an association property its users named themselves.
    "conversation": (ASSOCIATION + "conversation_id", ASSOCIATION + "session_id"),
}


def kind(name: str, attrs: Mapping[str, Any], span_kind: Any) -> str | None:
    found = attrs.get(A.TRACELOOP_SPAN_KIND)
    return named(found, KINDS)


def tool_input(value: Mapping[str, Any]) -> tuple[Any, str | None] | None:
    """Its record of a LangChain tool's input (``{"input_str": "{'city': 'Paris'}", "inputs":
    {...}, "kwargs": {"tool_call_id": ...}, "tags", "metadata"}``): the named arguments (its
    ``inputs``, else ``input_str`` read as a Python literal, never evaluated) and the model's
    call id; None for any other value."""
    if "input_str" not in value or not ({"inputs", "kwargs", "tags"} & value.keys()):
        return None
    extra = value.get("kwargs")
    call_id = extra.get("tool_call_id") if isinstance(extra, Mapping) else None
    inputs = value.get("inputs")
    if not isinstance(inputs, dict):
        inputs = _literal(value.get("input_str"))
    return inputs, None if call_id is None else str(call_id)


def tool_output(value: Any) -> Any:
    """Its record of a LangChain tool's output (``{"output": <ToolMessage>, "kwargs": ...}``):
    the output; any other value as it is."""
    if isinstance(value, Mapping) and "output" in value and set(value) <= {"output", "kwargs"}:
        return value["output"]
    return value


def _literal(text: Any) -> Any:
    """A Python literal's value (``{'city': 'Paris'}``), safely; an object for anything
    else."""
    if not isinstance(text, str):
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {"input": text}
    return value if isinstance(value, dict) else {"input": value}
