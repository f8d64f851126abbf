"""Reading span attribute values back: JSON-safe values and chat messages in the OpenInference,
GenAI and deprecated GenAI forms."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from agentdocket.ingest import attributes as A


def read_messages(
    attrs: Mapping[str, Any], oi_prefix: str, gen_ai_key: str, old_prefix: str
) -> list[dict[str, Any]]:
    """Messages from OpenInference's flattened list, GenAI's JSON (role + parts), or the
    deprecated indexed ``gen_ai.prompt.N.role`` / ``gen_ai.completion.N.content``."""
    out: list[dict[str, Any]] = []
    for m in A.indexed(attrs, oi_prefix):
        calls = []
        has_calls = any(k.startswith(A.MESSAGE_TOOL_CALLS) for k in m)
        for c in A.indexed(m, A.MESSAGE_TOOL_CALLS) if has_calls else ():
            args = A.loads(c.get(A.TOOL_CALL_FUNCTION_ARGUMENTS))
            call = {"name": str(c.get(A.TOOL_CALL_FUNCTION_NAME)), "arguments": args}
            if c.get(A.TOOL_CALL_ID) is not None:
                call["id"] = str(c[A.TOOL_CALL_ID])
            calls.append(jsonable(call))
        out.append(
            {
                "role": str(m.get(A.MESSAGE_ROLE, "user")),
                "content": str(m.get(A.MESSAGE_CONTENT, "")),
                "name": opt_str(m.get(A.MESSAGE_NAME)),
                "tool_calls": calls,
            }
        )
    if out:
        return _drop_none(out)
    structured = A.loads(attrs.get(gen_ai_key))
    if isinstance(structured, list):
        for m in structured:
            if isinstance(m, dict):
                default_role = "tool" if _is_tool_response(m) else "user"
                message: dict[str, Any] = {
                    "role": str(m.get("role") or default_role),
                    "content": _parts_text(m),
                }
                calls = _parts_tool_calls(m)
                if calls:
                    message["tool_calls"] = calls
                out.append(message)
        return out
    for m in A.indexed(attrs, f"gen_ai.{old_prefix}"):
        out.append({"role": str(m.get("role", "user")), "content": str(m.get("content", ""))})
    return out


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def attribute_json(value: Any) -> Any:
    """A span attribute as JSON (sequences become arrays; NaN and infinities become text)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [attribute_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def jsonable(value: Any) -> Any:
    """A value parsed from JSON text is JSON already; anything else goes through ``dumps``
    (a non-finite float becomes its text, as JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool | list | dict):
        return value
    return A.loads(A.dumps(value))


def _parts_text(message: Mapping[str, Any]) -> str:
    """A GenAI message's text: its text (and reasoning) parts, and the ``response`` of its
    ``tool_call_response`` parts (a tool's result handed back to the model)."""
    if isinstance(message.get("content"), str):
        return str(message["content"])
    return parts_text(message.get("parts"))


def parts_text(parts: Any) -> str:
    """The text of a list of GenAI message parts (see :func:`_parts_text`)."""
    if not isinstance(parts, list):
        return ""
    texts = []
    for p in parts:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "tool_call_response":
            response = p.get("response")
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


def _drop_none(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def _parts_tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """GenAI's ``{"type": "tool_call", "id", "name", "arguments"}`` parts."""
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


def plan_steps(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The plan a model's reply states: a step per tool call it requests (the tool, the
    arguments when they are an object, the call id), in order."""
    return [
        {
            "tool": str(call["name"]),
            "arguments": args if isinstance(args := call.get("arguments"), dict) else None,
            "call_id": opt_str(call.get("id")),
        }
        for m in messages
        for call in m.get("tool_calls") or ()
        if isinstance(call, Mapping) and call.get("name")
    ]


# Roles a ``(role, text)`` pair may name (LangChain's message-like tuples).
ROLES = frozenset({"user", "human", "assistant", "ai", "system", "developer", "tool", "function"})


def message_fields(value: Any) -> Mapping[str, Any] | None:
    """A chat message's fields from any of its forms: LangChain's ``dumpd`` constructor
    (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}``), OpenInference's
    ``{"type": ..., "data": {...}}``, a plain ``{"type"/"role": ..., "content": ...}``, a
    ``(role, text)`` pair, or a message object (anything with a string ``type`` and a
    ``content``, as langchain-core's messages have): never its ``repr``."""
    if isinstance(value, tuple | list):
        if (
            len(value) == 2
            and isinstance(value[0], str)
            and value[0].lower() in ROLES
            and isinstance(value[1], str | list)
        ):
            return {"role": value[0], "content": value[1]}
        return None
    if not isinstance(value, Mapping):
        kind, content = getattr(value, "type", None), getattr(value, "content", None)
        if not isinstance(kind, str) or content is None:
            return None
        fields: dict[str, Any] = {"type": kind, "content": content}
        for name in ("name", "tool_call_id", "tool_calls", "id"):
            if getattr(value, name, None) is not None:
                fields[name] = getattr(value, name)
        return fields
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), Mapping):
        return value["kwargs"]  # type: ignore[no-any-return]
    if isinstance(value.get("data"), Mapping) and "content" in value["data"]:
        return value["data"]  # type: ignore[no-any-return]
    if "content" in value and ("type" in value or "role" in value):
        return value
    return None


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            b if isinstance(b, str) else str(b.get("text", ""))
            for b in content
            if isinstance(b, str) or (isinstance(b, Mapping) and b.get("type") == "text")
        ]
        return "".join(texts)
    return "" if content is None else A.dumps(content)


def answer_text(value: Any) -> str:
    """The answer an agent's output holds: the text itself, the ``output`` (or ``answer``)
    member, the last of its ``messages``, a message's content; else the value as JSON."""
    if isinstance(value, str):
        return value
    fields = message_fields(value)
    if fields is not None:
        return content_text(fields.get("content"))
    if isinstance(value, Mapping):
        for key in ("output", "answer", "response", "result", "text", "content", "messages"):
            if key in value:
                return answer_text(value[key])
        if len(value) == 1:
            return answer_text(next(iter(value.values())))
    if isinstance(value, list) and value:
        return answer_text(value[-1])
    return "" if value is None else A.dumps(value)


def tool_message(value: Any) -> Mapping[str, Any] | None:
    """The fields of a serialised LangChain ``ToolMessage`` (a tool's result), else None."""
    fields = message_fields(value)
    if fields is None or not ("tool_call_id" in fields or fields.get("type") == "tool"):
        return None
    return fields


# --- values frameworks record their own way ------------------------------------------------

# Where frameworks keep a retrieved document's id and score when the standard attributes are
# missing (LlamaIndex, LangChain retrievers), in order of preference.
METADATA_IDS = ("id", "doc_id", "document_id", "node_id", "source")
METADATA_SCORES = ("score", "relevance_score", "similarity")


def named_arguments(value: Any) -> Any:
    """A tool's arguments by name: a wrapper of keyword arguments (``{"kwargs": {...}}``, with
    no or empty positional ``args``, as LlamaIndex records them) is unwrapped."""
    if (
        isinstance(value, dict)
        and isinstance(value.get("kwargs"), dict)
        and set(value) <= {"args", "kwargs"}
        and not value.get("args")
    ):
        return value["kwargs"]
    return value


def document_identity(
    found_id: Any, score: Any, metadata: Mapping[str, Any], position: int
) -> tuple[str, float | None]:
    """A retrieved document's id and score: the standard attributes, else the first of
    :data:`METADATA_IDS` / :data:`METADATA_SCORES` in its metadata, else its position and no
    score."""
    if found_id is None:
        found_id = next((metadata[k] for k in METADATA_IDS if metadata.get(k) is not None), None)
    if not isinstance(score, int | float) or isinstance(score, bool):
        score = next((metadata[k] for k in METADATA_SCORES if metadata.get(k) is not None), None)
    number = isinstance(score, int | float) and not isinstance(score, bool)
    return str(position if found_id is None else found_id), float(score) if number else None


def exception_text(events: Sequence[Any] | None) -> str | None:
    """The last exception recorded among a span's events (an ``exception`` event, as the
    OpenTelemetry conventions record one): ``Type: message``, or either alone."""
    for event in reversed(tuple(events or ())):
        if getattr(event, "name", None) != "exception":
            continue
        attrs = getattr(event, "attributes", None) or {}
        kind, message = attrs.get("exception.type"), attrs.get("exception.message")
        parts = [str(p) for p in (kind, message) if p not in (None, "")]
        if parts:
            return ": ".join(parts)
    return None
