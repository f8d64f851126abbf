"""Strict conversion between JSON values and the frozen payload dataclasses.

One source of truth: a payload class's type hints give both its validation (``from_json``)
and its documented JSON Schema (``json_schema``). Standard library only.

Supported hints: ``str``, ``int``, ``float`` (accepts ints), ``bool``, ``None``, unions,
``Literal[...]``, ``list[T]``, ``dict[str, T]``, nested dataclasses and ``Any`` (any JSON value).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from agentdocket.errors import AgentdocketError

T = TypeVar("T")

JSON_SCALARS = (str, int, float, bool, type(None))


class PayloadError(AgentdocketError, ValueError):
    """A JSON value that does not fit its declared shape. ``path`` names the offending place."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def check_json(value: object, path: str) -> Any:
    """Validate that ``value`` is plain JSON (finite numbers, string keys); return it."""
    if isinstance(value, float) and not math.isfinite(value):
        raise PayloadError(path, f"{value!r} is not a finite number (JSON has no NaN/Infinity)")
    if isinstance(value, JSON_SCALARS):
        return value
    if isinstance(value, list | tuple):
        return [check_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise PayloadError(path, f"object key {k!r} is not a string")
            out[k] = check_json(v, f"{path}.{k}")
        return out
    raise PayloadError(path, f"{type(value).__name__} is not a JSON value")


def _str(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise PayloadError(path, f"expected a string, got {_type_name(value)}")
    return value


def _int(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(path, f"expected an integer, got {_type_name(value)}")
    return value


def _float(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PayloadError(path, f"expected a number, got {_type_name(value)}")
    if not math.isfinite(value):
        raise PayloadError(path, f"{value!r} is not a finite number")
    return float(value)


def _bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise PayloadError(path, f"expected a boolean, got {_type_name(value)}")
    return value


def _none(value: Any, path: str) -> Any:
    if value is not None:
        raise PayloadError(path, f"expected null, got {_type_name(value)}")
    return None


# Checks of the scalar hints, shared by from_json and the compiled normalizer.
SCALARS: dict[Any, Callable[[Any, str], Any]] = {
    str: _str,
    int: _int,
    float: _float,
    bool: _bool,
    type(None): _none,
}


def _convert(hint: Any, value: object, path: str) -> Any:
    if hint is Any:
        return check_json(value, path)
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, path)
            except PayloadError as exc:
                errors.append(exc.problem)
        raise PayloadError(path, " or ".join(dict.fromkeys(errors)))
    if origin is Literal:
        allowed = get_args(hint)
        if value not in allowed:
            raise PayloadError(path, f"{value!r} is not one of {', '.join(map(repr, allowed))}")
        return value
    if origin is list:
        (item,) = get_args(hint)
        if not isinstance(value, list | tuple):
            raise PayloadError(path, f"expected an array, got {_type_name(value)}")
        return [_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, item = get_args(hint)
        if not isinstance(value, Mapping):
            raise PayloadError(path, f"expected an object, got {_type_name(value)}")
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise PayloadError(path, f"object key {k!r} is not a string")
            out[k] = _convert(item, v, f"{path}.{k}")
        return out
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise PayloadError(path, f"expected an object, got {_type_name(value)}")
        return from_json(hint, value, path)
    scalar = SCALARS.get(hint)
    if scalar is not None:
        return scalar(value, path)
    raise TypeError(f"unsupported type hint {hint!r} at {path}")


def from_json(cls: type[T], data: Mapping[str, Any], path: str = "payload") -> T:
    """Build ``cls`` from a JSON object, rejecting unknown keys, missing keys and wrong types."""
    if not isinstance(data, Mapping):
        raise PayloadError(path, f"expected an object, got {_type_name(data)}")
    assert dataclasses.is_dataclass(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise PayloadError(
            path, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(fields)}"
        )
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], f"{path}.{name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PayloadError(path, f"missing required field '{name}'")
    try:
        return cls(**kwargs)
    except ValueError as exc:
        if isinstance(exc, PayloadError):
            raise
        raise PayloadError(path, str(exc)) from None


def to_json(obj: Any) -> Any:
    """The JSON value of a payload dataclass (fields equal to their default are kept)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_json(v) for k, v in obj.items()}
    return obj


def _schema_of(hint: Any) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(option) for option in get_args(hint)]}
    if origin is Literal:
        return {"enum": list(get_args(hint))}
    if origin is list:
        return {"type": "array", "items": _schema_of(get_args(hint)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(get_args(hint)[1])}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return json_schema(hint)
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    return {"type": simple[hint]}


def json_schema(cls: type) -> dict[str, Any]:
    """JSON Schema (draft 2020-12 vocabulary) of a payload class, with field descriptions."""
    hints = _hints(cls)
    props: dict[str, Any] = {}
    required = []
    for f in dataclasses.fields(cls):
        prop = _schema_of(hints[f.name])
        doc = f.metadata.get("doc")
        if doc:
            prop = {"description": doc, **prop}
        props[f.name] = prop
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    return schema


def field(doc: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field with a description that ends up in the JSON Schema."""
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata={"doc": doc})
    if default is not dataclasses.MISSING:
        return dataclasses.field(default=default, metadata={"doc": doc})
    return dataclasses.field(metadata={"doc": doc})
