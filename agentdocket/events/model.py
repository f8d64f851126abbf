"""The immutable event: identity, position in its trace, time, kind and payload."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentdocket.events.codec import PayloadError, from_json, to_json
from agentdocket.events.compiled import normalizer
from agentdocket.events.payloads import PAYLOAD_TYPES

# Fixed namespace for deterministic event ids: uuid5(NAMESPACE, "trace/span/kind/index").
EVENT_NAMESPACE = uuid.UUID("6f1c7a52-0c1e-5b5e-9a0e-7d2b7c1a9e41")
TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


_NAMESPACE_BYTES = EVENT_NAMESPACE.bytes
# uuid5's version and variant bits, as uuid.UUID(bytes=..., version=5) sets them
_KEEP = ~((0xC000 << 48) | (0xF000 << 64))
_VERSION_5 = (0x8000 << 48) | (5 << 76)
_new, _set, _UNKNOWN = object.__new__, object.__setattr__, uuid.SafeUUID.unknown


def event_id_for(trace_id: str, span_id: str, kind: str, index: int) -> uuid.UUID:
    """The id of an event, derived from its identity so that a re-sent event is recognised:
    ``uuid5(EVENT_NAMESPACE, "trace/span/kind/index")``.

    The UUID is made from its integer directly, as ``UUID.__init__`` ends by doing, without
    its argument checks (a SHA-1 digest needs none): half the cost on every event stored.
    tests/unit/test_events.py holds it equal to ``uuid.uuid5``."""
    name = f"{trace_id}/{span_id}/{kind}/{index}".encode()
    digest = hashlib.sha1(_NAMESPACE_BYTES + name, usedforsecurity=False).digest()
    made = _new(uuid.UUID)
    _set(made, "int", (int.from_bytes(digest[:16]) & _KEEP) | _VERSION_5)
    _set(made, "is_safe", _UNKNOWN)
    return made


def check_trace_id(value: object, where: str = "trace_id") -> str:
    if not isinstance(value, str) or not TRACE_ID.match(value) or value == "0" * 32:
        raise PayloadError(where, f"{value!r} is not a trace id (32 lowercase hex, not all zero)")
    return value


def check_span_id(value: object, where: str = "span_id") -> str:
    if not isinstance(value, str) or not SPAN_ID.match(value) or value == "0" * 16:
        raise PayloadError(where, f"{value!r} is not a span id (16 lowercase hex, not all zero)")
    return value


def utc(ts: datetime) -> datetime:
    """A timestamp in UTC, truncated to whole microseconds. Naive datetimes are refused."""
    if ts.tzinfo is UTC:
        return ts  # what astimezone(UTC) gives it
    if ts.tzinfo is None or ts.utcoffset() is None:
        raise ValueError(f"timestamp {ts.isoformat()} has no time zone; pass an aware datetime")
    return ts.astimezone(UTC)


def parse_ts(value: object, where: str) -> datetime:
    """An ISO 8601 timestamp with a zone (``Z`` or ``+hh:mm``) as an aware UTC datetime."""
    if not isinstance(value, str):
        raise PayloadError(where, f"expected an ISO 8601 timestamp string, got {value!r}")
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        raise PayloadError(where, f"{value!r} is not an ISO 8601 timestamp") from None
    if ts.tzinfo is None:
        raise PayloadError(where, f"{value!r} has no time zone (add Z or +00:00)")
    return ts.astimezone(UTC)


def now() -> datetime:
    return datetime.now(UTC)


def format_ts(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Event:
    """One immutable entry of the event log.

    ``payload`` is the kind's JSON object at ``schema_version``; ``data`` gives it typed.
    Build events with :meth:`Event.create`, which validates the payload and derives the id.
    """

    event_id: uuid.UUID
    trace_id: str
    span_id: str
    parent_span_id: str | None
    seq: int
    ts: datetime
    kind: str
    payload: Mapping[str, Any]
    schema_version: int

    @classmethod
    def create(
        cls,
        *,
        trace_id: str,
        span_id: str,
        payload: Any,
        seq: int,
        ts: datetime | None = None,
        parent_span_id: str | None = None,
        kind: str | None = None,
        index: int = 0,
    ) -> Event:
        """An event from a payload dataclass (or a JSON object plus ``kind``), validated.

        ``index`` tells apart events of the same kind in the same span (0, 1, ...).
        """
        if isinstance(payload, Mapping):
            if kind is None:
                raise ValueError("a payload given as a mapping needs its kind")
            data = validate_payload(kind, payload)
        else:
            kind = getattr(type(payload), "KIND", None)
            if kind not in PAYLOAD_TYPES or not isinstance(payload, PAYLOAD_TYPES[kind]):
                raise TypeError(f"{type(payload).__name__} is not an event payload")
            data = to_json(payload)
        check_trace_id(trace_id)
        check_span_id(span_id)
        if parent_span_id is not None:
            check_span_id(parent_span_id, "parent_span_id")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise PayloadError("seq", f"{seq!r} is not a non-negative integer")
        return cls(
            event_id=event_id_for(trace_id, span_id, kind, index),
            trace_id=trace_id,
            span_id=span_id,
            parent_span_id=parent_span_id,
            seq=seq,
            ts=utc(ts) if ts is not None else now(),
            kind=kind,
            payload=data,
            schema_version=_VERSIONS[kind],
        )

    @classmethod
    def assemble(
        cls,
        *,
        trace_id: str,
        span_id: str,
        parent_span_id: str | None,
        seq: int,
        ts: datetime,
        kind: str,
        payload: dict[str, Any],
        index: int = 0,
    ) -> Event:
        """An event from parts already checked: ids well-formed, ``ts`` aware UTC, ``payload``
        the output of :func:`validate_payload` for ``kind``. For hot paths (the exporter) that
        check ids once per span; everything else uses :meth:`create`."""
        return cls(
            event_id_for(trace_id, span_id, kind, index),
            trace_id,
            span_id,
            parent_span_id,
            seq,
            ts,
            kind,
            payload,
            _VERSIONS[kind],
        )

    @property
    def data(self) -> Any:
        """The payload as its typed dataclass (upcast to the current version)."""
        payload = upcast(self.kind, self.schema_version, self.payload)
        return from_json(PAYLOAD_TYPES[self.kind], payload, f"{self.kind} payload")

    def upcast(self) -> Event:
        """This event with its payload at the current schema version (stored rows stay)."""
        current = current_version(self.kind)
        if self.schema_version == current:
            return self
        payload = upcast(self.kind, self.schema_version, self.payload)
        return Event(
            self.event_id,
            self.trace_id,
            self.span_id,
            self.parent_span_id,
            self.seq,
            self.ts,
            self.kind,
            payload,
            current,
        )


def validate_payload(
    kind: str, payload: Mapping[str, Any], path: str = "payload"
) -> dict[str, Any]:
    """Check a JSON payload against its kind's current schema; return it as plain JSON."""
    cls = PAYLOAD_TYPES.get(kind)
    if cls is None:
        raise PayloadError(
            "kind", f"unknown event kind {kind!r}; known: {', '.join(PAYLOAD_TYPES)}"
        )
    return normalizer(cls)(payload, path)


_VERSIONS: dict[str, int] = {k: c.VERSION for k, c in PAYLOAD_TYPES.items()}  # type: ignore[attr-defined]

# --- upcasting -------------------------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def current_version(kind: str) -> int:
    version = _VERSIONS.get(kind)
    if version is None:
        raise PayloadError("kind", f"unknown event kind {kind!r}")
    return version


def register_upcaster(kind: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function raising a ``kind`` payload from ``from_version`` to the next."""

    def decorate(fn: Upcaster) -> Upcaster:
        _UPCASTERS[(kind, from_version)] = fn
        return fn

    return decorate


def unregister_upcaster(kind: str, from_version: int) -> None:
    _UPCASTERS.pop((kind, from_version), None)


# The payloads' own history: version 2 of retrieval added optional fields, so a version-1
# payload is a valid version-2 one as it is.
_UPCASTERS[("retrieval", 1)] = dict


def upcast(kind: str, version: int, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload raised step by step from ``version`` to the kind's current version."""
    target = current_version(kind)
    if version > target:
        raise PayloadError(
            "schema_version",
            f"{kind} payload has version {version}, newer than this agentdocket knows "
            f"({target}); upgrade agentdocket",
        )
    while version < target:
        step = _UPCASTERS.get((kind, version))
        if step is None:
            raise PayloadError(
                "schema_version", f"no upcaster for {kind} from version {version} to {version + 1}"
            )
        payload = step(dict(payload))
        version += 1
    return payload


# --- plain JSON form of a whole event (for spools and queues) ---------------------------------


def event_to_json(event: Event) -> dict[str, Any]:
    """The event, envelope and payload, as a JSON object; :func:`event_from_json` inverts it."""
    return {
        "event_id": str(event.event_id),
        "trace_id": event.trace_id,
        "span_id": event.span_id,
        "parent_span_id": event.parent_span_id,
        "seq": event.seq,
        "ts": format_ts(event.ts),
        "kind": event.kind,
        "schema_version": event.schema_version,
        "payload": event.payload,
    }


def event_from_json(obj: Mapping[str, Any], where: str = "event") -> Event:
    """An event from :func:`event_to_json`'s form; the envelope is checked, the payload kept
    as stored at its ``schema_version`` (it is upcast on read, like a stored row)."""
    try:
        event_id = uuid.UUID(str(obj["event_id"]))
        kind = obj["kind"]
        version = obj["schema_version"]
        payload = obj["payload"]
        seq = obj["seq"]
    except (KeyError, ValueError) as exc:
        raise PayloadError(where, f"not an event object ({exc})") from None
    current_version(kind)
    if not isinstance(payload, Mapping):
        raise PayloadError(f"{where}.payload", "expected an object")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise PayloadError(f"{where}.seq", f"{seq!r} is not a non-negative integer")
    if isinstance(version, bool) or not isinstance(version, int):
        raise PayloadError(f"{where}.schema_version", f"{version!r} is not an integer")
    parent = obj.get("parent_span_id")
    return Event(
        event_id=event_id,
        trace_id=check_trace_id(obj.get("trace_id"), f"{where}.trace_id"),
        span_id=check_span_id(obj.get("span_id"), f"{where}.span_id"),
        parent_span_id=None if parent is None else check_span_id(parent, f"{where}.parent"),
        seq=seq,
        ts=parse_ts(obj.get("ts"), f"{where}.ts"),
        kind=kind,
        payload=dict(payload),
        schema_version=version,
    )
