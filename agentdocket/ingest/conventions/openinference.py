"""OpenInference (Arize): ``openinference.span.kind`` names the step, ``input.value`` /
``output.value`` carry what went in and out, ``llm.*`` a model call (with its messages as
flattened lists, ``llm.input_messages.N.message.*``), ``tool.*`` a tool."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentdocket.ingest import attributes as A
from agentdocket.ingest.conventions.kinds import LLM, RETRIEVAL, RUN, TOOL, named
from agentdocket.ingest.decode import jsonable

KINDS = {
    A.OI_AGENT: RUN,
    A.OI_CHAIN: RUN,
    A.OI_TOOL: TOOL,
    A.OI_LLM: LLM,
    A.OI_RETRIEVER: RETRIEVAL,
}

FIELDS: dict[str, tuple[str, ...]] = {
    "agent_name": (A.AGENT_NAME,),
    "conversation": (A.SESSION_ID,),
    "tool_name": (A.TOOL_NAME,),
    "tool_arguments": (A.INPUT_VALUE,),
    "tool_result": (A.OUTPUT_VALUE,),
    "tool_call_id": (A.TOOL_CALL_ID,),
    "model": (A.LLM_MODEL,),
    "input_tokens": (A.LLM_PROMPT_TOKENS,),
    "output_tokens": (A.LLM_COMPLETION_TOKENS,),
    "cache_read_tokens": ("llm.token_count.prompt_details.cache_read",),
    "cache_creation_tokens": ("llm.token_count.prompt_details.cache_write",),
    "reasoning_tokens": ("llm.token_count.completion_details.reasoning",),
    "retrieval_query": (A.INPUT_VALUE,),
}


def kind(name: str, attrs: Mapping[str, Any], span_kind: Any) -> str | None:
    found = attrs.get(A.OI_SPAN_KIND)
    return named(found, KINDS)


def messages(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """A flattened list (``llm.input_messages`` / ``llm.output_messages``): role, content (or
    the multi-part ``message.contents.N.message_content.text``), name and tool calls."""
    out: list[dict[str, Any]] = []
    for m in A.indexed(attrs, prefix):
        calls = _tool_calls(m)
        content = m.get(A.MESSAGE_CONTENT)
        if content is None:  # the multi-part form
            content = "".join(
                str(c.get(A.MESSAGE_CONTENT_TEXT) or "")
                for c in A.indexed(m, A.MESSAGE_CONTENTS)
                if c.get(A.MESSAGE_CONTENT_TYPE, "text") == "text"
            )
        message: dict[str, Any] = {
            "role": str(m.get(A.MESSAGE_ROLE, "user")),
            "content": str(content),
        }
        name = m.get(A.MESSAGE_NAME)
        if name is not None:
            message["name"] = str(name)
        message["tool_calls"] = calls
        out.append(message)
    return out


def _tool_calls(message: Mapping[str, Any]) -> list[Any]:
    """A flattened message's ``message.tool_calls.N.tool_call.*``."""
    for key in message:
        if key.startswith(A.MESSAGE_TOOL_CALLS):
            break
    else:
        return []
    calls = []
    for c in A.indexed(message, A.MESSAGE_TOOL_CALLS):
        args = A.loads(c.get(A.TOOL_CALL_FUNCTION_ARGUMENTS))
        call = {"name": str(c.get(A.TOOL_CALL_FUNCTION_NAME)), "arguments": args}
        if c.get(A.TOOL_CALL_ID) is not None:
            call["id"] = str(c[A.TOOL_CALL_ID])
        calls.append(jsonable(call))
    return calls
