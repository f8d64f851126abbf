"""An ``llm.called`` payload in its validated, normalised form, made without the general
validation where its values have their declared types already (the common case: the mapping
builds them so), for the receiver's hot path.

:func:`normalised` gives exactly what ``validate_payload("llm.called", payload)`` gives (every
field of :class:`agentdocket.events.payloads.LlmCalled` in order, absent ones at their
defaults), or None when any value is not plainly of its type: the caller then validates, and
gets the same value or the same error. ``tests/unit/test_mapping_unchanged.py`` holds every
payload the mapping makes equal to its validated form, field order included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from agentdocket.events.codec import PayloadError, check_json

_MESSAGE_FIELDS = frozenset({"role", "content", "name", "tool_calls"})
_OPTIONAL_INTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
)


def normalised(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The normalised ``llm.called`` payload (None values are absent ones), or None."""
    get = payload.get
    model, role, error = get("model"), get("role"), get("error")
    temperature, duration = get("temperature"), get("duration_ms")
    if (
        type(model) is not str
        or not (role is None or type(role) is str)
        or not (error is None or type(error) is str)
        or not (temperature is None or _finite(temperature))
        or not (duration is None or _finite(duration))
        or any(not (get(k) is None or type(get(k)) is int) for k in _OPTIONAL_INTS)
    ):
        return None
    inputs = _messages(get("input_messages"))
    outputs = _messages(get("output_messages"))
    attributes = _json_object(get("attributes"))
    if inputs is None or outputs is None or attributes is None:
        return None
    return {
        "model": model,
        "role": role,
        "input_messages": inputs,
        "output_messages": outputs,
        "temperature": temperature,
        "input_tokens": get("input_tokens"),
        "output_tokens": get("output_tokens"),
        "cache_read_tokens": get("cache_read_tokens"),
        "cache_creation_tokens": get("cache_creation_tokens"),
        "reasoning_tokens": get("reasoning_tokens"),
        "duration_ms": duration,
        "error": error,
        "attributes": attributes,
    }


def _finite(value: Any) -> bool:
    return type(value) is float and math.isfinite(value)


def _messages(given: Any) -> list[dict[str, Any]] | None:
    if given is None:
        return []
    if type(given) is not list:
        return None
    out = []
    for m in given:
        if type(m) is not dict or not _MESSAGE_FIELDS.issuperset(m):
            return None
        role, content, name = m.get("role"), m.get("content"), m.get("name")
        if type(role) is not str or type(content) is not str:
            return None
        if not (name is None or type(name) is str):
            return None
        calls = m.get("tool_calls", [])
        if type(calls) is not list:
            return None
        if calls:
            calls = [_json_object(c) for c in calls]
            if any(c is None for c in calls):
                return None
        out.append({"role": role, "content": content, "name": name, "tool_calls": calls})
    return out


def _json_object(given: Any) -> dict[str, Any] | None:
    """A ``dict[str, Any]`` field's normalised value (a copy, its members checked JSON)."""
    if given is None:
        return {}
    if type(given) is not dict or not all(type(k) is str for k in given):
        return None
    try:
        return {k: check_json(v, "") for k, v in given.items()}
    except PayloadError:
        return None
