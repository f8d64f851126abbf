"""OTLP attribute values and JSON members, decoded strictly: shared by the trace and the log
requests' decoders (:mod:`agentdocket.ingest.otlp`, :mod:`agentdocket.ingest.otlp_logs`).
A value that does not fit fails with an :class:`OtlpDecodeError` naming its place; a value
nested past the limits (:mod:`agentdocket.store.limits`) is the limit's marker below that
depth, and a record's attributes past ``max_attributes`` are counted, not kept."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from agentdocket.errors import AgentdocketError
from agentdocket.store.limits import LIVE as LIMITS
from agentdocket.store.limits import bound_attributes

MAX_DEPTH = LIMITS.max_depth  # nesting of array / key-value list attribute values
MAX_ATTRIBUTES = LIMITS.max_attributes


class OtlpDecodeError(AgentdocketError, ValueError):
    """The request is not a valid OTLP export; the message names the place."""


def json_document(body: bytes) -> dict[str, Any]:
    """An OTLP/JSON request's body as its top-level object."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise OtlpDecodeError(f"body: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise OtlpDecodeError("body: expected a JSON object")
    return doc


def pb_attributes(items: Any, where: str = "") -> dict[str, Any]:
    """Protobuf ``KeyValue`` attributes as a dict (``where``: their place, for messages)."""
    out = {}
    for kv in items:
        value = kv.value
        which = value.WhichOneof("value")
        if which == "string_value":  # the common case, inline
            out[kv.key] = value.string_value
        elif which in _PB_SCALARS:
            out[kv.key] = getattr(value, which)
        else:
            out[kv.key] = pb_value(value, f"{where}.attributes[{kv.key!r}]", 0)
    return out if len(out) <= MAX_ATTRIBUTES else bound_attributes(out, LIMITS)


_PB_SCALARS = frozenset({"bool_value", "int_value", "double_value"})


def pb_value(value: Any, where: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return LIMITS.depth_marker()
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [pb_value(v, where, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: pb_value(kv.value, where, depth + 1) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, which)


def member(obj: Mapping[str, Any], camel: str, snake: str, where: str, kind: type) -> Any:
    value = obj.get(camel, obj.get(snake))
    if value is not None and not isinstance(value, kind):
        raise OtlpDecodeError(f"{where}.{camel}: expected {_kind_name(kind)}")
    return value


def _kind_name(kind: type) -> str:
    names: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
    return names.get(kind, kind.__name__)


def items(obj: Any, camel: str, snake: str, where: str) -> Iterator[tuple[int, dict[str, Any]]]:
    values = member(obj, camel, snake, where, list) or []
    for i, item in enumerate(values):
        if not isinstance(item, dict):
            raise OtlpDecodeError(f"{where}.{camel}[{i}]: expected an object")
        yield i, item


def hex_id(
    obj: Mapping[str, Any], camel: str, snake: str, size: int, where: str, optional: bool = False
) -> bytes:
    value = member(obj, camel, snake, where, str)
    if not value:
        if optional:
            return b""
        raise OtlpDecodeError(f"{where}.{camel}: missing")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != size:
        # Some producers send protobuf-JSON's base64 for bytes; accept it when it fits.
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != size:
            raise OtlpDecodeError(f"{where}.{camel}: expected {2 * size} hex digits")
    return raw


def uint(obj: Mapping[str, Any], camel: str, snake: str, where: str) -> int:
    value = obj.get(camel, obj.get(snake, 0))
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise OtlpDecodeError(f"{where}.{camel}: expected an unsigned 64-bit integer")


def json_attributes(obj: Mapping[str, Any], where: str, depth: int = 0) -> dict[str, Any]:
    out = {}
    for i, kv in items(obj, "attributes", "attributes", where):
        key = kv.get("key")
        if not isinstance(key, str):
            raise OtlpDecodeError(f"{where}.attributes[{i}].key: expected a string")
        out[key] = json_value(kv.get("value"), f"{where}.attributes[{key!r}]", depth)
    return out if depth else bound_attributes(out, LIMITS)


_SCALARS = {
    "stringValue": str,
    "string_value": str,
    "boolValue": bool,
    "bool_value": bool,
    "doubleValue": float,
    "double_value": float,
}


def json_value(value: Any, where: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return LIMITS.depth_marker()
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise OtlpDecodeError(f"{where}: expected an AnyValue object with one member")
    [(kind, v)] = value.items()
    if kind in _SCALARS:
        want = _SCALARS[kind]
        if want is float and isinstance(v, int | str) and not isinstance(v, bool):
            try:
                return float(v)  # JSON numbers without a point; "NaN" / "Infinity"
            except ValueError:
                pass
        if not isinstance(v, want) or (want is not bool and isinstance(v, bool)):
            raise OtlpDecodeError(f"{where}.{kind}: expected {want.__name__}")
        return v
    if kind in ("intValue", "int_value"):
        if isinstance(v, str) and v.isascii() and v.lstrip("-").isdigit():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or not -(2**63) <= v < 2**63:
            raise OtlpDecodeError(f"{where}.{kind}: expected a 64-bit integer")
        return v
    if kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value"):
        if not isinstance(v, dict):
            raise OtlpDecodeError(f"{where}.{kind}: expected an object")
        values = v.get("values", [])
        if not isinstance(values, list):
            raise OtlpDecodeError(f"{where}.{kind}.values: expected an array")
        if kind.startswith("array"):
            return [json_value(x, where, depth + 1) for x in values]
        return json_attributes({"attributes": values}, where, depth + 1)
    if kind in ("bytesValue", "bytes_value"):
        if not isinstance(v, str):
            raise OtlpDecodeError(f"{where}.{kind}: expected base64 text")
        return v
    raise OtlpDecodeError(f"{where}: unknown AnyValue member {kind!r}")
