"""The limits on one record (:mod:`agentdocket.store.limits`): past each, a marker naming it;
within them, the same object; binding twice changes nothing; the quick proof of
:func:`bound_json` agrees with the walk; no value, however deep, makes binding recurse without
end."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentdocket.store.limits import (
    DROPPED_ATTRIBUTES,
    TRUNCATED_MEMBER,
    Limits,
    bound,
    bound_attributes,
    bound_json,
)

SMALL = Limits(max_depth=4, max_string=10, max_items=3, max_attributes=2)


def _deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def test_each_limit_leaves_a_marker_naming_it() -> None:
    deep = bound(_deep(6), SMALL)
    assert _depth(deep) == 4
    assert "nested deeper than 4 levels; limit max_depth" in json.dumps(deep)
    assert (
        bound("x" * 25, SMALL) == "x" * 10 + "[agentdocket: 15 more characters; limit max_string]"
    )
    assert bound([1, 2, 3, 4, 5], SMALL) == [
        1,
        2,
        3,
        "[agentdocket: 2 more items; limit max_items]",
    ]
    wide = bound({str(i): i for i in range(5)}, SMALL)
    assert wide == {"0": 0, "1": 1, "2": 2, TRUNCATED_MEMBER: wide[TRUNCATED_MEMBER]}
    assert "2 more items" in wide[TRUNCATED_MEMBER]
    assert bound({"k" * 12: 1}, SMALL) == {"k" * 10 + bound("k" * 12, SMALL)[10:]: 1}
    assert bound_attributes({"a": 1, "b": 2, "c": 3}, SMALL) == {
        "a": 1,
        "b": 2,
        DROPPED_ATTRIBUTES: 1,
    }


def test_a_value_within_the_limits_is_the_same_object() -> None:
    value = {"messages": [{"role": "user", "content": "hi"}], "n": 3, "t": (1, 2)}
    assert bound({"a": [1, {"b": "c"}]}) == {"a": [1, {"b": "c"}]}
    kept = {"a": [1, {"b": "c"}]}
    assert bound(kept) is kept
    assert bound_json(kept)[0] is kept
    assert bound(value)["t"] == [1, 2]  # a tuple is JSON's array


def test_nesting_far_past_the_recursion_limit_is_bound_without_recursing() -> None:
    value = orjson.loads("[" * 1000 + "]" * 1000)
    bounded, raw = bound_json(value)
    assert raw is None and _depth(bounded) == 64
    assert orjson.loads(orjson.dumps(bounded)) == bounded


def test_limits_must_be_positive_integers() -> None:
    with pytest.raises(ValueError, match="max_depth must be a positive integer, not 0"):
        Limits(max_depth=0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=14), children, max_size=6)
    ),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(1, 6), st.integers(1, 20), st.integers(1, 5))
def test_binding_is_idempotent_and_the_quick_proof_agrees_with_the_walk(
    value: Any, depth: int, string: int, items: int
) -> None:
    limits = Limits(max_depth=depth, max_string=string, max_items=items)
    once = bound(value, limits)
    assert bound(once, limits) == once
    assert _depth(once) <= depth
    quick, raw = bound_json(value, limits)
    assert quick == once
    if raw is not None:  # the proof held: nothing was past a limit
        assert quick is value and raw == orjson.dumps(value)
