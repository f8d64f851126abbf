"""OpenTelemetry's GenAI semantic conventions (now kept in the ``semantic-conventions-genai``
repository), in their current form and the older ones instrumentations still send, and the
MCP conventions beside them.

- The operation (``gen_ai.operation.name``) names the step: ``invoke_agent`` and
  ``invoke_workflow`` an agent or a workflow, ``handle_conversation_turn`` a turn of a
  conversation (each the run, at a trace's root; an invocation below another is a step),
  ``execute_tool`` a tool, ``chat`` / ``text_completion`` / ``generate_content`` a model call,
  ``retrieval`` and ``search_memory`` a retrieval (documents in ``gen_ai.retrieval.documents``
  / ``gen_ai.memory.records``), ``plan`` an agent's planning (its plan is the reply of the model
  call below it), ``run_step`` a step named by ``gen_ai.step.name``; any other (the other memory
  operations, ``apply_guardrail``) a step named as the span is.
- A model call's messages: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON parts:
  text, ``tool_call``, ``tool_call_response``) and ``gen_ai.system_instructions``, as span
  attributes or as the attributes of a ``gen_ai.client.inference.operation.details`` event;
  older: ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``, or a
  ``gen_ai.{system,user,assistant,tool}.message`` event per message and ``gen_ai.choice`` per
  reply (:func:`agentdocket.ingest.messages.event_messages`).
- MCP: an MCP server's span of a call (``mcp.method.name``, span kind ``SERVER``) is the
  server's side of a call its client records: a step, never a second tool call.
- A2A (agent-to-agent, ``a2a.method.name``, no ``gen_ai.operation.name``): a client's call to a
  remote agent is a step; the server's span is the remote agent's run when it is a trace's root
  (where an A2A request enters a service), else the server's side of a call: a step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import SpanKind

from agentdocket.ingest import attributes as A
from agentdocket.ingest.conventions.kinds import LLM, PLAN, RETRIEVAL, RUN, STEP, TOOL, named
from agentdocket.ingest.decode import document_identity, jsonable

KINDS = {
    A.OP_INVOKE_AGENT: RUN,
    A.OP_INVOKE_WORKFLOW: RUN,
    A.OP_HANDLE_TURN: RUN,  # a turn of a conversation (gen_ai.conversation.id)
    A.OP_EXECUTE_TOOL: TOOL,
    A.OP_RETRIEVAL: RETRIEVAL,
    "search_memory": RETRIEVAL,
    A.OP_PLAN: PLAN,
    **dict.fromkeys(A.LLM_OPERATIONS, LLM),
}
MCP_SERVER_SIDE = frozenset({SpanKind.SERVER, SpanKind.CONSUMER})

FIELDS: dict[str, tuple[str, ...]] = {
    "agent_name": (A.GEN_AI_AGENT_NAME, A.GEN_AI_WORKFLOW_NAME),
    "step_name": (A.GEN_AI_STEP_NAME,),
    "agent_version": (A.GEN_AI_AGENT_VERSION,),
    "conversation": (A.GEN_AI_CONVERSATION_ID,),
    "tool_name": (A.GEN_AI_TOOL_NAME,),
    "tool_arguments": (A.GEN_AI_TOOL_CALL_ARGUMENTS,),
    "tool_result": (A.GEN_AI_TOOL_CALL_RESULT,),
    "tool_call_id": (A.GEN_AI_TOOL_CALL_ID,),
    "model": (A.GEN_AI_REQUEST_MODEL, A.GEN_AI_RESPONSE_MODEL),
    "input_tokens": (A.GEN_AI_INPUT_TOKENS, A.GEN_AI_PROMPT_TOKENS_OLD),
    "output_tokens": (A.GEN_AI_OUTPUT_TOKENS, A.GEN_AI_COMPLETION_TOKENS_OLD),
    "cache_read_tokens": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
    ),
    # renamed cache_write in autumn 2026 (semantic-conventions-genai #440, no alias kept);
    # the older names are still sent (Strands, Pydantic AI, OpenInference's GenAI mirror)
    "cache_creation_tokens": (
        "gen_ai.usage.cache_write.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_write_input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
    ),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens"),
    "retrieval_query": (A.GEN_AI_RETRIEVAL_QUERY, "gen_ai.memory.query.text"),
    "retrieval_documents": (A.GEN_AI_RETRIEVAL_DOCUMENTS, A.GEN_AI_MEMORY_RECORDS),
}
A2A_SERVER_SIDE = MCP_SERVER_SIDE


def kind(name: str, attrs: Mapping[str, Any], span_kind: Any) -> str | None:
    if attrs.get(A.MCP_METHOD) is not None and span_kind in MCP_SERVER_SIDE:
        return STEP
    op = attrs.get(A.GEN_AI_OPERATION)
    if op is None and attrs.get(A.A2A_METHOD) is not None:
        return RUN if span_kind in A2A_SERVER_SIDE else STEP
    return named(op, KINDS)


def documents(value: Any) -> list[dict[str, Any]]:
    """Retrieved documents or memory records as JSON (``gen_ai.retrieval.documents``: ``id``,
    ``score``; ``gen_ai.memory.records``: ``content``, any JSON, ``id``, ``score``,
    ``metadata``): id (else the position), score, text and metadata; none for anything else."""
    found = A.loads(value)
    if not isinstance(found, list):
        return []
    out = []
    for i, d in enumerate(found):
        if not isinstance(d, dict):
            d = {"content": d}
        meta = d.get("metadata")
        meta = jsonable(meta) if isinstance(meta, dict) else {}
        found_id, score = document_identity(d.get("id"), d.get("score"), meta, i)
        content = d.get("content")
        text = content if isinstance(content, str) or content is None else A.dumps(content)
        out.append({"id": found_id, "score": score, "text": text, "metadata": meta})
    return out


def messages(attrs: Mapping[str, Any], key: str, older: str) -> list[dict[str, Any]]:
    """The messages under ``key`` (``gen_ai.input.messages`` / ``gen_ai.output.messages``:
    role and parts), else the older indexed ``gen_ai.{older}.N.role`` / ``.content``."""
    structured = A.loads(attrs.get(key))
    out: list[dict[str, Any]] = []
    if isinstance(structured, list):
        for m in structured:
            if isinstance(m, dict):
                default_role = "tool" if _is_tool_response(m) else "user"
                message: dict[str, Any] = {
                    "role": str(m.get("role") or default_role),
                    "content": message_text(m),
                }
                calls = _tool_calls(m)
                if calls:
                    message["tool_calls"] = calls
                out.append(message)
        return out
    for m in A.indexed(attrs, f"gen_ai.{older}"):
        out.append({"role": str(m.get("role", "user")), "content": str(m.get("content", ""))})
    return out


def with_instructions(
    attrs: Mapping[str, Any], inputs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A call's input messages with ``gen_ai.system_instructions`` (text, or parts) as their
    first, ``system``, message, unless they begin with one already."""
    given = A.loads(attrs.get(A.GEN_AI_SYSTEM_INSTRUCTIONS))
    instructions = given if isinstance(given, str) else parts_text(given)
    if instructions and not (inputs and inputs[0].get("role") == "system"):
        return [{"role": "system", "content": instructions}, *inputs]
    return inputs


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: its text (and reasoning) parts, and the ``response`` of its
    ``tool_call_response`` parts (a tool's result handed back to the model)."""
    if isinstance(message.get("content"), str):
        return str(message["content"])
    return parts_text(message.get("parts"))


def parts_text(parts: Any) -> str:
    """The text of a list of message parts (see :func:`message_text`)."""
    if not isinstance(parts, list):
        return ""
    texts = []
    for p in parts:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "tool_call_response":
            response = p.get("response", p.get("result"))
            texts.append(response if isinstance(response, str) else A.dumps(response))
        elif p.get("content") is not None:
            texts.append(str(p["content"]))
    return "\n".join(t for t in texts if t)


def _is_tool_response(message: Mapping[str, Any]) -> bool:
    parts = message.get("parts")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(p, dict) and p.get("type") == "tool_call_response" for p in parts)
    )


def _tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{"type": "tool_call", "id", "name", "arguments"}`` parts."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return []
    calls = []
    for p in parts:
        if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("name"):
            call = {"name": str(p["name"]), "arguments": jsonable(A.loads(p.get("arguments")))}
            if p.get("id") is not None:
                call["id"] = str(p["id"])
            calls.append(call)
    return calls
