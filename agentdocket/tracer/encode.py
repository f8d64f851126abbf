"""Encoding documents and chat messages as OpenInference's flattened span attributes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentdocket.ingest import attributes as A


def document_attributes(documents: Iterable[Any]) -> dict[str, Any]:
    """OpenInference ``retrieval.documents.N.document.*`` attributes of documents given as
    :class:`~agentdocket.events.Document`, mappings (``id``, ``score``, ``text``/``content``,
    ``metadata``), ``(id, score)`` pairs or plain ids."""
    attrs: dict[str, Any] = {}
    for i, doc in enumerate(documents):
        prefix = f"{A.RETRIEVAL_DOCUMENTS}.{i}."
        if isinstance(doc, str):
            doc_id, score, text, meta = doc, None, None, None
        elif isinstance(doc, tuple):
            doc_id, score, text, meta = str(doc[0]), doc[1] if len(doc) > 1 else None, None, None
        elif isinstance(doc, Mapping):
            doc_id = str(doc.get("id"))
            score = doc.get("score")
            text = doc.get("text", doc.get("content"))
            meta = doc.get("metadata")
        else:
            doc_id = str(getattr(doc, "id", doc))
            score = getattr(doc, "score", None)
            text = getattr(doc, "text", None)
            meta = getattr(doc, "metadata", None)
        attrs[prefix + A.DOCUMENT_ID] = doc_id
        if score is not None:
            attrs[prefix + A.DOCUMENT_SCORE] = float(score)
        if text is not None:
            attrs[prefix + A.DOCUMENT_CONTENT] = A.text_value(text)
        if meta:
            attrs[prefix + A.DOCUMENT_METADATA] = A.dumps(meta)
    return attrs


def message_attributes(prefix: str, messages: Iterable[Any]) -> dict[str, Any]:
    """OpenInference ``llm.*_messages.N.message.*`` attributes of messages given as mappings
    (``role``, ``content``, ``name``, ``tool_calls``), ``(role, content)`` pairs, objects with
    ``role``/``content`` (or langchain's ``type``/``content``) or plain strings (user turns)."""
    attrs: dict[str, Any] = {}
    for i, msg in enumerate(messages):
        p = f"{prefix}.{i}."
        if isinstance(msg, str):
            role, content, name, calls = "user", msg, None, None
        elif isinstance(msg, tuple):
            role, content, name, calls = str(msg[0]), msg[1], None, None
        elif isinstance(msg, Mapping):
            role = str(msg.get("role", "user"))
            content, name, calls = msg.get("content", ""), msg.get("name"), msg.get("tool_calls")
        else:
            role = str(getattr(msg, "role", None) or getattr(msg, "type", "user"))
            content = getattr(msg, "content", "")
            name, calls = getattr(msg, "name", None), getattr(msg, "tool_calls", None)
        attrs[p + A.MESSAGE_ROLE] = role
        attrs[p + A.MESSAGE_CONTENT] = A.text_value(content if content is not None else "")
        if name:
            attrs[p + A.MESSAGE_NAME] = str(name)
        for j, call in enumerate(calls or ()):
            c = f"{p}{A.MESSAGE_TOOL_CALLS}.{j}."
            if isinstance(call, Mapping):
                fn = call.get("function") if isinstance(call.get("function"), Mapping) else call
                assert isinstance(fn, Mapping)
                attrs[c + A.TOOL_CALL_FUNCTION_NAME] = str(fn.get("name"))
                args = fn.get("arguments", fn.get("args", {}))
                attrs[c + A.TOOL_CALL_FUNCTION_ARGUMENTS] = (
                    args if isinstance(args, str) else A.dumps(args)
                )
                if call.get("id"):
                    attrs[c + A.TOOL_CALL_ID] = str(call["id"])
    return attrs
