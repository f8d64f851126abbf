"""Framework rules: fields no convention carries, each rule named for its framework. A rule is
the exception; a framework that follows a convention needs none.

- **Google ADK**, its older layout (ADK's telemetry schema 1, and ADK 1.x): the run's root is
  an attribute-less span named ``invocation``; a tool's arguments and response lie in
  ``gcp.vertex.agent.tool_call_args`` / ``gcp.vertex.agent.tool_response``; a tool call with
  no id says ``<not specified>``.
- **smolagents**: its ``final_answer`` tool ends a run with the answer (the run's answer, not
  a tool call or a step of its plan); it records a tool's input as keyword arguments beside
  its own flag (``{"args": [], "sanitize_inputs_outputs": true, "kwargs": {...}}``).
- **LlamaIndex**: a tool's input as keyword arguments (``{"args": [], "kwargs": {...}}``); a
  workflow agent's record of a tool call (``{"tool_name", "tool_kwargs", "tool_id",
  "tool_output": {"raw_output", "is_error", ...}}``, what OpenLLMetry's instrumentation gives as
  the output of the task span that records the call) holds the model's call id, the tool's
  output, and whether the tool failed (its exception then caught: the span is not an error).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdocket.ingest import attributes as A
from agentdocket.ingest.conventions.kinds import RUN

FIELDS: dict[str, tuple[str, ...]] = {
    "tool_arguments": (A.ADK_TOOL_ARGS,),
    "tool_result": (A.ADK_TOOL_RESPONSE,),
}
NO_CALL_ID = "<not specified>"  # Google ADK
FINAL_ANSWER_TOOLS = A.FINAL_ANSWER_TOOLS  # smolagents
_WRAPPER = frozenset({"args", "kwargs"})
_TOOL_CALL_RECORD = frozenset({"tool_name", "tool_kwargs", "tool_id", "tool_output"})


def kind(name: str, attrs: Mapping[str, Any], span_kind: Any) -> str | None:
    if name == A.ADK_INVOCATION and set(attrs) <= {A.SERVICE_NAME}:
        return RUN
    return None


def keyword_arguments(value: Mapping[str, Any]) -> Any:
    """The keyword arguments of a wrapper with no positional ones (LlamaIndex, smolagents),
    beside which only a framework's flags (booleans) may stand; None for any other value."""
    kwargs = value.get("kwargs")
    flags = all(isinstance(v, bool) or v is None for k, v in value.items() if k not in _WRAPPER)
    if isinstance(kwargs, dict) and not value.get("args") and flags:
        return kwargs
    return None


def tool_call_record(value: Any) -> tuple[Any, str | None, str | None] | None:
    """LlamaIndex's record of a tool call (its ``ToolCallResult``): the tool's output, the
    model's call id and, when the tool failed, its error text; None for any other value."""
    if not isinstance(value, Mapping) or not value.keys() >= _TOOL_CALL_RECORD:
        return None
    output = value["tool_output"]
    if not isinstance(output, Mapping) or "raw_output" not in output:
        return None
    result = output["raw_output"]
    error = str(result) if output.get("is_error") is True else None
    call_id = value.get("tool_id")
    return result, None if call_id is None else str(call_id), error
