"""Compiled payload normalisation: ``normalizer(cls)`` validates a JSON object against a payload
dataclass and returns its normalised JSON (every field present, defaults filled, ints widened to
floats where a float is declared) without building the dataclass.

It is exactly ``to_json(from_json(cls, data, path))`` with the same error messages, compiled
once per class into closures, so the hot paths (the exporter mapping spans, imports) pay a
fraction of the reflective version's cost. Classes with a ``__post_init__`` check are still
instantiated, to run it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from agentdocket.events.codec import SCALARS, PayloadError, _type_name, check_json, to_json

Converter = Callable[[Any, str], Any]
Normalizer = Callable[[Any, str], dict[str, Any]]


@cache
def normalizer(cls: type) -> Normalizer:
    """The compiled ``to_json(from_json(cls, data, path))`` of a payload dataclass."""
    hints = typing.get_type_hints(cls)
    specs: list[tuple[str, Converter, bool, Callable[[], Any]]] = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if f.default_factory is not dataclasses.MISSING:
            default: Callable[[], Any] = f.default_factory
        else:
            default = _constant(to_json(f.default))
        specs.append((f.name, _converter(hints[f.name]), required, default))
    names = frozenset(s[0] for s in specs)
    allowed = ", ".join(s[0] for s in specs)
    check = cls if "__post_init__" in vars(cls) else None

    def normalize(data: Any, path: str) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise PayloadError(path, f"expected an object, got {_type_name(data)}")
        if not names.issuperset(data):
            unknown = sorted(set(data) - names)
            raise PayloadError(path, f"unknown field(s) {', '.join(unknown)}; allowed: {allowed}")
        out: dict[str, Any] = {}
        for name, convert, required, default in specs:
            if name in data:
                out[name] = convert(data[name], f"{path}.{name}")
            elif required:
                raise PayloadError(path, f"missing required field '{name}'")
            else:
                out[name] = default()
        if check is not None:
            try:
                check(**out)
            except ValueError as exc:
                if isinstance(exc, PayloadError):
                    raise
                raise PayloadError(path, str(exc)) from None
        return out

    return normalize


def _constant(value: Any) -> Callable[[], Any]:
    """The default of a field with a plain (immutable) default value."""
    return lambda: value


def _converter(hint: Any) -> Converter:
    if hint is Any:
        return check_json
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        return _union([o for o in options if o is not type(None)], type(None) in options)
    if origin is Literal:
        allowed = get_args(hint)
        shown = ", ".join(map(repr, allowed))

        def literal(value: Any, path: str) -> Any:
            if value not in allowed:
                raise PayloadError(path, f"{value!r} is not one of {shown}")
            return value

        return literal
    if origin is list:
        item = _converter(get_args(hint)[0])

        def array(value: Any, path: str) -> Any:
            if not isinstance(value, list | tuple):
                raise PayloadError(path, f"expected an array, got {_type_name(value)}")
            return [item(v, f"{path}[{i}]") for i, v in enumerate(value)]

        return array
    if origin is dict:
        member = _converter(get_args(hint)[1])

        def obj(value: Any, path: str) -> Any:
            if not isinstance(value, Mapping):
                raise PayloadError(path, f"expected an object, got {_type_name(value)}")
            out = {}
            for k, v in value.items():
                if not isinstance(k, str):
                    raise PayloadError(path, f"object key {k!r} is not a string")
                out[k] = member(v, f"{path}.{k}")
            return out

        return obj
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        nested = hint

        def record(value: Any, path: str) -> Any:
            if isinstance(value, nested):
                return to_json(value)
            return normalizer(nested)(value, path)

        return record
    return SCALARS[hint]


def _union(options: list[Any], nullable: bool) -> Converter:
    converters = [_converter(o) for o in options]

    def union(value: Any, path: str) -> Any:
        if value is None and nullable:
            return None
        errors = []
        for convert in converters:
            try:
                return convert(value, path)
            except PayloadError as exc:
                errors.append(exc.problem)
        if nullable and not converters:
            errors.append(f"expected null, got {_type_name(value)}")
        raise PayloadError(path, " or ".join(dict.fromkeys(errors)))

    return union
