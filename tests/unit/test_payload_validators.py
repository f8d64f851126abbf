"""The two payload validators agree on generated payloads of every kind.

``validate_payload`` runs the compiled normaliser (:mod:`agentdocket.events.compiled`) on the
hot paths; ``to_json(from_json(...))`` (:mod:`agentdocket.events.codec`) is the reflective
definition it must equal. Payloads are drawn from each payload type's own field types, each
field sometimes replaced by any JSON value, left out, or joined by an unknown key: both must
then give the same normalised JSON, or the same error naming the same place.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, Union

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentdocket.events import KINDS, PAYLOAD_TYPES, PayloadError, validate_payload
from agentdocket.events.codec import from_json, to_json

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _valid(hint: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of ``hint`` as JSON (mostly valid: nested fields may draw junk too)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return JSON
    if origin in (Union, types.UnionType):
        return st.one_of([_field(option, depth) for option in typing.get_args(hint)])
    if origin is Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin is list:
        return st.lists(_field(typing.get_args(hint)[0], depth + 1), max_size=3)
    if origin is dict:
        return st.dictionaries(
            st.text(max_size=6), _field(typing.get_args(hint)[1], depth + 1), max_size=3
        )
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object(hint, depth + 1)
    return {
        str: st.text(max_size=10),
        int: st.integers(-(2**66), 2**66),
        float: st.floats(allow_nan=True) | st.integers(-100, 100),
        bool: st.booleans(),
        type(None): st.none(),
    }[hint]


def _field(hint: Any, depth: int) -> st.SearchStrategy[Any]:
    if depth > 3:
        return JSON
    return st.integers(0, 19).flatmap(lambda n: JSON if n == 0 else _valid(hint, depth))


def _object(cls: type, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """An object of ``cls``'s fields, each left out one time in twenty; an unknown key one
    time in ten."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: _field(hints[f.name], depth) for f in dataclasses.fields(cls) if f.init}
    kept = st.fixed_dictionaries({name: st.integers(0, 19) for name in fields})
    values = st.fixed_dictionaries(fields)
    extra = st.dictionaries(st.sampled_from(["zz_unknown", "x"]), JSON, max_size=1)
    return st.tuples(values, kept, extra, st.integers(0, 9)).map(
        lambda t: {k: v for k, v in t[0].items() if t[1][k]} | (t[2] if t[3] == 0 else {})
    )


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except PayloadError as exc:
        return "error", (exc.path, str(exc))


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_and_reflective_validators_agree(kind: str, data: st.DataObject) -> None:
    cls = PAYLOAD_TYPES[kind]
    payload = data.draw(_object(cls))
    compiled = _outcome(lambda: validate_payload(kind, payload))
    reflective = _outcome(lambda: to_json(from_json(cls, payload)))
    event(compiled[0])  # both outcomes are drawn (see --hypothesis-show-statistics)
    assert compiled == reflective
