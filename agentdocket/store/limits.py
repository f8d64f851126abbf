"""Limits on what one record may hold, applied before anything is stored or spooled.

A value sent by anyone who may send spans can be built to hurt: JSON nested a thousand levels
deep makes every recursive encoder (and SQLite's JSON functions, which stop at 1,000 levels)
fail; a string of a hundred megabytes bloats every backend. So every event's payload is bound
to explicit limits before it reaches the spool or the store, and what goes past a limit is
replaced by a marker naming it, never dropped in silence and never taken for an outage.

Live ingestion (the receiver, the tracer, the LangChain handler) applies :data:`LIVE`, the
class's defaults. The store applies :data:`STORE` to everything else (imports, a program's own
``Store.append``): nesting depth alone, since a study's data is kept as it is (one real
response of the IBM coalitions study is a 3 MB string) and only depth breaks the machinery.

==================  =========  =========  =====================================================
limit               live       store      past it
==================  =========  =========  =====================================================
``max_depth``       64         64         a value nested deeper becomes the marker
                                          ``[agentdocket: nested deeper than 64 levels;
                                          limit max_depth]``
``max_string``      8 Mi       none       a string (or a member name) is cut there, and
                                          ``[agentdocket: 12,345 more characters; limit
                                          max_string]`` appended
``max_items``       100,000    none       an array keeps its first items and gains the
                                          marker as its last; an object its first members and
                                          ``agentdocket.truncated``
``max_attributes``  4,096      4,096      (the receiver) a span or log record keeps its first
                                          4,096 attributes; ``agentdocket.dropped_attributes``
                                          counts the rest
``max_age``         400 days   none       the event is refused: a dead letter naming the limit
``max_ahead``       1 day      none       the event is refused: a dead letter naming the limit
==================  =========  =========  =====================================================

A record bound this way is stored with the rest of its run (a root span over a limit still
makes its run). Binding is idempotent, and costs one serialisation when nothing is past a
limit, which is almost always (:func:`bound_json`).

The time window keeps a clock far off, or anyone who may send spans, from making a partition
decades away (every month between 1970 and 2554 would be one each). ``agentdocket
dead-letters retry`` stores such an event deliberately: the store opened by the command line
bounds no time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

MARKER = "[agentdocket: {detail}; limit {limit}]"
_MARKER = re.compile(r"\[agentdocket: [^\]]*; limit max_[a-z]+\]")
_MORE = re.compile(r"\[agentdocket: [0-9,]+ more items; limit max_items\]")
_CUT = re.compile(r"\[agentdocket: [0-9,]+ more characters; limit max_string\]")
TRUNCATED_MEMBER = "agentdocket.truncated"
DROPPED_ATTRIBUTES = "agentdocket.dropped_attributes"


@dataclass(frozen=True)
class Limits:
    """What one record may hold (see the module's documentation)."""

    max_depth: int = 64
    max_string: int | None = 8 * 1024 * 1024  # None: no limit
    max_items: int | None = 100_000
    max_attributes: int = 4_096
    max_age: timedelta | None = timedelta(days=400)  # older events are refused
    max_ahead: timedelta | None = timedelta(days=1)  # events further ahead are refused

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_string", "max_items", "max_attributes"):
            value = getattr(self, name)
            if value is None and name in ("max_string", "max_items"):
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"limits: {name} must be a positive integer, not {value!r}")
        for name in ("max_age", "max_ahead"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, timedelta) or value <= timedelta(0)):
                raise ValueError(f"limits: {name} must be a positive duration, not {value!r}")

    def untimely(self, ts: datetime, now: datetime) -> str | None:
        """Why an event dated ``ts`` is refused at ``now``, or None when its time is accepted."""
        if self.max_age is not None and ts < now - self.max_age:
            return f"{_dated(ts)}, older than {_span(self.max_age)} (limit max_age)"
        if self.max_ahead is not None and ts > now + self.max_ahead:
            return f"{_dated(ts)}, more than {_span(self.max_ahead)} ahead (limit max_ahead)"
        return None  # (the accepted case, once an event: no text is made for it)

    def depth_marker(self) -> str:
        return MARKER.format(
            detail=f"nested deeper than {self.max_depth} levels", limit="max_depth"
        )

    def cut(self, text: str) -> str:
        """``text`` cut at ``max_string`` characters, the marker saying how many went."""
        if (
            self.max_string is None
            or len(text) <= self.max_string
            or _CUT.fullmatch(text, self.max_string)
            or _MARKER.fullmatch(text)
        ):
            return text  # within the limit, cut already, or a marker
        more = len(text) - self.max_string
        return text[: self.max_string] + MARKER.format(
            detail=f"{more:,} more characters", limit="max_string"
        )

    def items_marker(self, more: int) -> str:
        return MARKER.format(detail=f"{more:,} more items", limit="max_items")


DURATION = re.compile(r"^\s*(\d+)\s*([hdw])\s*$")
UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_duration(text: str) -> timedelta:
    """``36h``, ``90d`` or ``12w`` as a duration (positive)."""
    match = DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r}: give a positive number and a unit, h, d or w (e.g. 90d)")
    if int(match.group(1)) == 0:
        raise ValueError(f"{text!r}: give more than nothing (0 would keep nothing)")
    return int(match.group(1)) * UNITS[match.group(2)]


def _span(d: timedelta) -> str:
    if d % timedelta(days=1):
        hours = d / timedelta(hours=1)
        return f"{hours:g} hour{'s' if hours != 1 else ''}"
    return f"{d.days} day{'s' if d.days != 1 else ''}"


def _dated(ts: datetime) -> str:
    return f"dated {ts.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


# Live ingestion's: every limit (the class's defaults).
LIVE = Limits()
# The store's, for everything else (imports, a program's own appends): nesting depth alone.
STORE = Limits(max_string=None, max_items=None, max_age=None, max_ahead=None)


def bound(value: Any, limits: Limits = STORE) -> Any:
    """``value`` (any JSON) within ``limits``; the same object when it already was. Never
    recurses deeper than ``max_depth``, however deep ``value`` is."""
    return _bound(value, limits, 1)


def _bound(value: Any, limits: Limits, depth: int) -> Any:
    if isinstance(value, str):
        return limits.cut(value)
    if not isinstance(value, Mapping | list | tuple):
        return value
    if depth > limits.max_depth:
        return limits.depth_marker()
    if isinstance(value, Mapping):
        return _bound_object(value, limits, depth)
    keep = _kept(value, limits)
    items = list(value[:keep])
    changed = len(value) > keep or not isinstance(value, list)
    for i, item in enumerate(items):
        new = _bound(item, limits, depth + 1)
        if new is not item:
            items[i], changed = new, True
    if len(value) > keep:
        items.append(limits.items_marker(len(value) - keep))
    elif keep < len(value):
        items.append(value[-1])
    return items if changed else value


def _kept(value: Any, limits: Limits) -> int:
    """How many of an array's items are kept: all, else ``max_items`` (an array bound already
    holds one more, the marker)."""
    n = len(value)
    if limits.max_items is None:
        return n
    if n == limits.max_items + 1 and isinstance(value[-1], str) and _MORE.fullmatch(value[-1]):
        return n
    return min(n, limits.max_items)


def _bound_object(value: Mapping[Any, Any], limits: Limits, depth: int) -> Any:
    out: dict[Any, Any] = {}
    changed = not isinstance(value, dict)
    cap = limits.max_items
    for n, (key, item) in enumerate(value.items()):
        if n == cap and not (key == TRUNCATED_MEMBER and len(value) == n + 1):
            out[TRUNCATED_MEMBER] = limits.items_marker(len(value) - cap)
            changed = True
            break
        name = limits.cut(key) if isinstance(key, str) and key != TRUNCATED_MEMBER else key
        new = _bound(item, limits, depth + 1)
        changed = changed or new is not item or name is not key
        out[name] = new
    return out if changed else value


def bound_json(value: Any, limits: Limits = STORE) -> tuple[Any, bytes | None]:
    """``value`` within ``limits``, and its JSON when one serialisation proves that nothing in
    it is past a limit (so callers need not serialise it again); else the bound value walked
    and ``None``. The proof: JSON no longer than ``max_string`` holds no longer string, and
    with no more brackets than ``max_depth`` and no more commas than ``max_items`` it nests
    no deeper and no container holds more."""
    try:
        raw = orjson.dumps(value)
    except (TypeError, RecursionError):  # too deep for orjson, a lone surrogate, a big int
        return bound(value, limits), None
    if (
        (limits.max_string is None or len(raw) <= limits.max_string)
        and raw.count(b"[") + raw.count(b"{") <= limits.max_depth
        and (limits.max_items is None or raw.count(b",") < limits.max_items)
    ):
        return value, raw
    new = bound(value, limits)
    return (value, raw) if new is value else (new, None)


def bound_attributes(attributes: dict[str, Any], limits: Limits = LIVE) -> dict[str, Any]:
    """A span's or log record's attributes, the first ``max_attributes`` of them (the rest
    counted in ``agentdocket.dropped_attributes``)."""
    if len(attributes) <= limits.max_attributes:
        return attributes
    kept = dict(list(attributes.items())[: limits.max_attributes])
    kept[DROPPED_ATTRIBUTES] = len(attributes) - limits.max_attributes
    return kept
