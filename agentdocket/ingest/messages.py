"""Reading chat messages back from spans: OpenInference's flattened lists, the GenAI
conventions' JSON parts and their older event form, LangChain's serialised messages; and the
question and answer a run's input and output hold."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentdocket.ingest import attributes as A
from agentdocket.ingest.decode import jsonable, opt_str


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
    """A message's content as text: a string, or the text of its content blocks (typed
    ``{"type": "text", "text": ...}`` blocks, or the Converse form's ``{"text": ...}``; a
    ``toolResult`` block's own content)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_block_text(b) for b in content)
    return "" if content is None else A.dumps(content)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, Mapping):
        return ""
    if block.get("type", "text") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    result = block.get("toolResult")
    if isinstance(result, Mapping):
        return content_text(result.get("content"))
    return ""


def blocks_text(value: Any) -> Any:
    """A value that is a list of text content blocks (``[{"text": ...}]``, as Strands records
    a tool's result) as its text; any other value as it is."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(b, Mapping) and isinstance(b.get("text"), str) for b in value)
    ):
        return "".join(str(b["text"]) for b in value)
    return value


# A framework's printout of an object, not prose: ``StopEvent(result=...)``,
# ``AIMessage(content='...', additional_kwargs={...})``, ``<x.Context object at 0x7f...>``.
_PRINTOUT = re.compile(r"^\s*(?:[A-Z]\w*\(\w+=|<[\w.]+ object at 0x[0-9a-fA-F]+>)")

QUESTION_KEYS = ("input", "question", "query", "task", "messages", "text", "content")
ANSWER_KEYS = (
    "output",
    "answer",
    "response",
    "result",
    "final_output",
    "text",
    "content",
    "messages",
    "raw",  # CrewAI's CrewOutput: the final text beside its tasks' outputs
)


def is_printout(text: str) -> bool:
    """Whether ``text`` is a framework's printout of an object rather than text."""
    return bool(_PRINTOUT.match(text))


def _text_in(value: Any, keys: Sequence[str], *, dump: bool) -> str | None:
    if isinstance(value, str):
        return None if is_printout(value) or not value.strip() else value
    fields = message_fields(value)
    if fields is not None:
        return content_text(fields.get("content")) or None
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                return _text_in(value[key], keys, dump=dump)
        if len(value) == 1:
            return _text_in(next(iter(value.values())), keys, dump=dump)
    elif isinstance(value, list):
        return _text_in(value[-1], keys, dump=dump) if value else None
    if value is None or not dump:
        return None
    return A.dumps(value)


def question_text(value: Any) -> str | None:
    """The question a run's input holds: the text itself, a message's content, the ``input``
    (``question``, ``query``, ...) member, the last of its ``messages``. None for anything else
    (a workflow's state, an object's printout): the question is then read from the run's model
    calls (:attr:`agentdocket.events.Trace.question`)."""
    return _text_in(value, QUESTION_KEYS, dump=False)


def answer_text(value: Any) -> str | None:
    """The answer a run's output holds: the text itself, the ``output`` (``answer``, ...)
    member, the last of its ``messages``, a message's content; other structured output as
    JSON. None for an object's printout (a ``StopEvent(...)``): the answer is then read from
    the run's model calls (:attr:`agentdocket.events.Trace.response`)."""
    return _text_in(value, ANSWER_KEYS, dump=True)


def tool_message(value: Any) -> Mapping[str, Any] | None:
    """The fields of a serialised LangChain ``ToolMessage`` (a tool's result), else None."""
    fields = message_fields(value)
    if fields is None or not ("tool_call_id" in fields or fields.get("type") == "tool"):
        return None
    return fields


def _event_body(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A GenAI message event's body: JSON in ``gen_ai.event.content`` (or ``body``), else its
    attributes, JSON text among them parsed."""
    for key in ("gen_ai.event.content", "body", "event.body"):
        found = A.loads(attrs.get(key))
        if isinstance(found, dict):
            return found
    return {k: A.loads(v) if isinstance(v, str) and v[:1] in "[{" else v for k, v in attrs.items()}


def _event_calls(calls: Any) -> list[dict[str, Any]]:
    """Tool calls as the event form writes them: ``{id, type, function: {name, arguments}}``
    (or ``name`` and ``arguments`` at the top)."""
    out = []
    for c in calls if isinstance(calls, list) else ():
        if not isinstance(c, Mapping):
            continue
        given = c.get("function")
        fn: Mapping[str, Any] = given if isinstance(given, Mapping) else c
        if not fn.get("name"):
            continue
        call = {"name": str(fn["name"]), "arguments": jsonable(A.loads(fn.get("arguments")))}
        if c.get("id") is not None:
            call["id"] = str(c["id"])
        out.append(call)
    return out


def _gemini_message(role: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """The Gemini API's ``Content`` (``{"role", "parts": [{"text"}, {"function_call"}, ...]}``,
    as Google ADK's older layout logs it): its text parts and its function calls."""
    texts, calls = [], []
    for part in content["parts"]:
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(str(part["text"]))
        fn = part.get("function_call")
        if isinstance(fn, Mapping) and fn.get("name"):
            call = {"name": str(fn["name"]), "arguments": jsonable(fn.get("args"))}
            if fn.get("id") is not None:
                call["id"] = str(fn["id"])
            calls.append(call)
    given = content.get("role")
    message: dict[str, Any] = {
        "role": "assistant" if given == "model" else str(given or role),
        "content": "".join(texts),
    }
    if calls:
        message["tool_calls"] = calls
    return message


def _block_calls(content: Any) -> list[dict[str, Any]]:
    """The Converse form's ``{"toolUse": {"toolUseId", "name", "input"}}`` blocks as calls."""
    calls = []
    for b in content if isinstance(content, list) else ():
        use = b.get("toolUse") if isinstance(b, Mapping) else None
        if isinstance(use, Mapping) and use.get("name"):
            call = {"name": str(use["name"]), "arguments": jsonable(use.get("input"))}
            if use.get("toolUseId") is not None:
                call["id"] = str(use["toolUseId"])
            calls.append(call)
    return calls


def _event_message(role: str, body: Mapping[str, Any]) -> dict[str, Any]:
    content = A.loads(body.get("content"))
    if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
        return _gemini_message(role, content)
    message: dict[str, Any] = {
        "role": str(body.get("role") or role),
        "content": content_text(content).strip() if role == "assistant" else content_text(content),
    }
    calls = _event_calls(body.get("tool_calls")) + _block_calls(content)
    if calls:
        message["tool_calls"] = calls
    return message


def event_messages(
    events: Sequence[Any] | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Input and output messages from the GenAI conventions' older event form: a
    ``gen_ai.{system,user,assistant,tool}.message`` event per input message and a
    ``gen_ai.choice`` event per output, in event order."""
    return bodies_messages(
        (getattr(e, "name", None), _event_body(getattr(e, "attributes", None) or {}))
        for e in events or ()
    )


def bodies_messages(
    bodies: Iterable[tuple[Any, Mapping[str, Any]]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Input and output messages from the older event form's ``(event name, body)`` pairs,
    whether the events were span events or log records."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, body in bodies:
        if name in A.GEN_AI_MESSAGE_EVENTS:
            inputs.append(_event_message(A.GEN_AI_MESSAGE_EVENTS[name], body))
        elif name == A.GEN_AI_CHOICE_EVENT:
            found = body.get("message")
            message: Mapping[str, Any] = (
                found
                if isinstance(found, Mapping)
                else {"content": found}  # text, or content blocks
                if isinstance(found, str | list)
                else body
            )
            outputs.append(_event_message("assistant", message))
    return inputs, outputs
