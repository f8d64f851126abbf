"""agentdocket.ingest.llm_payload gives an llm.called payload's validated form, or None (the
caller validates) for any value not plainly of its declared type."""

from __future__ import annotations

from typing import Any

import pytest

from agentdocket.events import PayloadError, validate_payload
from agentdocket.ingest.llm_payload import normalised

CALL = {"name": "sql", "arguments": {"q": [1, 2.5, None]}, "id": "c1"}
PLAIN: dict[str, Any] = {
    "model": "m",
    "input_messages": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi", "name": "ann", "tool_calls": []},
    ],
    "output_messages": [{"role": "assistant", "content": "", "tool_calls": [CALL]}],
    "temperature": 0.5,
    "input_tokens": 3,
    "duration_ms": 1.5,
    "attributes": {"provider": "x", "tools": [{"a": 1}]},
}


def test_a_plain_payload_is_its_validated_form() -> None:
    got = normalised(PLAIN)
    valid = validate_payload("llm.called", PLAIN)
    assert got is not None and (got, list(got)) == (valid, list(valid))
    assert normalised({"model": "m"}) == validate_payload("llm.called", {"model": "m"})


@pytest.mark.parametrize(
    "change",
    [
        {"model": 3},
        {"role": 1},
        {"temperature": 1},  # an int, widened by validation
        {"temperature": float("nan")},
        {"input_tokens": True},
        {"reasoning_tokens": 2.0},
        {"duration_ms": float("inf")},
        {"error": ["x"]},
        {"input_messages": ({"role": "user", "content": "x"},)},
        {"input_messages": [{"role": "user"}]},
        {"input_messages": [{"role": "user", "content": "x", "extra": 1}]},
        {"input_messages": [{"role": "user", "content": "x", "tool_calls": None}]},
        {"input_messages": [{"role": "user", "content": "x", "name": 5}]},
        {"output_messages": [{"role": "a", "content": "", "tool_calls": [{"a": float("nan")}]}]},
        {"output_messages": [{"role": "a", "content": "", "tool_calls": ["call"]}]},
        {"attributes": {1: "x"}},
        {"attributes": {"x": {1, 2}}},
        {"attributes": []},
    ],
)
def test_anything_else_is_left_to_validation(change: dict[str, Any]) -> None:
    payload = {**PLAIN, **change}
    assert normalised(payload) is None
    try:
        valid = validate_payload("llm.called", payload)
    except PayloadError:
        return
    assert valid  # validation may accept it, in a form of its own
