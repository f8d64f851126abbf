"""The receiver's rules for spans no convention expects, applied to each request's spans before
they are mapped (each documented, with its test, in docs/recording/otlp.md "Edge cases"):

- **A span ending before it starts** ends when it starts (:mod:`agentdocket.ingest.otlp`).
- **A span id used twice in one request**: identical repeats are one span (a batch sent twice
  within one request). A repeat that differs is kept, under a span id of its own derived from
  the original's and its place in the request (so a retried request derives the same), with
  ``agentdocket.duplicate_of`` naming the span id it repeated: nothing is lost, and the first
  one stays the span its children hang from.
- **A parent cycle within one request** (a span its own ancestor) is broken at the span of the
  cycle that started first (ties: the smallest span id): it becomes a root, and
  ``agentdocket.parent_cycle`` keeps the parent it gave. An agent span there starts its run.
- **An empty request** (no spans) is accepted and stores nothing, as OTLP asks.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

from opentelemetry.trace import SpanContext

from agentdocket.ingest.otlp import ReceivedSpan

DUPLICATE_OF = "agentdocket.duplicate_of"
PARENT_CYCLE = "agentdocket.parent_cycle"

Key = tuple[int, int]  # trace id, span id


def apply(spans: Sequence[ReceivedSpan]) -> list[ReceivedSpan]:
    """``spans`` with the rules applied (the same spans, in order, where none applies)."""
    return _break_cycles(_separate_repeats(spans))


def _key(span: ReceivedSpan) -> Key:
    return span.context.trace_id, span.context.span_id


def _separate_repeats(spans: Sequence[ReceivedSpan]) -> list[ReceivedSpan]:
    first: dict[Key, ReceivedSpan] = {}
    for span in spans:
        first.setdefault(_key(span), span)
    if len(first) == len(spans):  # no span id used twice (the common case)
        return list(spans)
    out: list[ReceivedSpan] = []
    for place, span in enumerate(spans):
        original = first[_key(span)]
        if original is span:
            out.append(span)
        elif _content(span) != _content(original):
            out.append(_renamed(span, place))
    return out


def _content(span: ReceivedSpan) -> tuple[object, ...]:
    """What tells two spans apart (the SDK's ``Status`` compares by identity)."""
    status = (span.status.status_code, span.status.description)
    return (
        span.name,
        span.parent,
        span.attributes,
        span.start_time,
        span.end_time,
        status,
        span.events,
        span.kind,
    )


def _renamed(span: ReceivedSpan, place: int) -> ReceivedSpan:
    trace_id, span_id = _key(span)
    digest = hashlib.sha256(f"{trace_id:032x}/{span_id:016x}/{place}".encode()).digest()
    new_id = int.from_bytes(digest[:8], "big") or 1
    context = SpanContext(trace_id=trace_id, span_id=new_id, is_remote=True)
    attributes = {**span.attributes, DUPLICATE_OF: f"{span_id:016x}"}
    return dataclasses.replace(span, context=context, attributes=attributes)


def _break_cycles(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    parent_of: dict[Key, Key | None] = {}
    for s in spans:
        context, parent = s.context, s.parent
        key = (context.trace_id, context.span_id)
        parent_of[key] = (parent.trace_id, parent.span_id) if parent is not None else None
    walked: dict[Key, int] = {}  # span -> the walk up its parents that first reached it
    broken: set[Key] = set()
    for walk, key in enumerate(parent_of):
        at: Key | None = key
        while at is not None and at not in walked:
            walked[at] = walk
            at = parent_of.get(at)
        if at is not None and walked[at] == walk:  # back on this walk's own chain: a cycle
            cycle = [at]
            while (after := parent_of[cycle[-1]]) != at:
                assert after is not None
                cycle.append(after)
            start = {_key(s): s.start_time for s in spans}
            broken.add(min(cycle, key=lambda k: (start[k], k[1])))
    if not broken:
        return spans
    return [_rooted(s) if _key(s) in broken else s for s in spans]


def _rooted(span: ReceivedSpan) -> ReceivedSpan:
    assert span.parent is not None
    attributes = {**span.attributes, PARENT_CYCLE: f"{span.parent.span_id:016x}"}
    return dataclasses.replace(span, parent=None, attributes=attributes)
