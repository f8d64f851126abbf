"""The receiver's rules for parent cycles and repeated span ids (agentdocket.ingest.span_rules)
over random requests: every cycle is broken once, at its earliest span, and nothing else
changes; repeats that differ are kept under ids of their own."""

from __future__ import annotations

import random

import pytest
from opentelemetry.trace import SpanContext, Status, StatusCode

from agentdocket.ingest import span_rules
from agentdocket.ingest.otlp import ReceivedSpan

TRACE = 0xABC


def _span(span_id: int, parent: int | None, start: int, name: str = "s") -> ReceivedSpan:
    def ctx(i: int) -> SpanContext:
        return SpanContext(trace_id=TRACE, span_id=i, is_remote=True)

    return ReceivedSpan(
        name=name,
        context=ctx(span_id),
        parent=ctx(parent) if parent is not None else None,
        attributes={},
        start_time=start,
        end_time=start + 1,
        status=Status(StatusCode.UNSET),
    )


def _cycles(parents: dict[int, int | None]) -> list[list[int]]:
    """The cycles of a span -> parent map, found the plain way."""
    found: list[list[int]] = []
    for first in parents:
        path: list[int] = []
        at: int | None = first
        while at is not None and at in parents and at not in path:
            path.append(at)
            at = parents[at]
        if at is not None and at in path:
            cycle = path[path.index(at) :]
            if not any(set(cycle) == set(c) for c in found):
                found.append(cycle)
    return found


@pytest.mark.parametrize("seed", range(200))
def test_each_cycle_is_broken_at_its_earliest_span(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    ids = rng.sample(range(1, 40), n)
    outside = [100, 101]  # parents not in the request
    parents = {i: rng.choice([None, *ids, *ids, *outside]) for i in ids}
    starts = {i: rng.randint(0, 5) for i in ids}  # ties broken by the smallest span id
    spans = [_span(i, parents[i], starts[i]) for i in ids]
    out = span_rules.apply(spans)
    earliest = {min(c, key=lambda i: (starts[i], i)) for c in _cycles(parents)}
    assert [s.context.span_id for s in out] == ids
    for i, s in zip(ids, out, strict=True):
        if i in earliest:
            assert s.parent is None
            assert s.attributes == {span_rules.PARENT_CYCLE: f"{parents[i]:016x}"}
        else:
            assert s is spans[ids.index(i)]


def test_repeats_are_one_span_or_kept_apart() -> None:
    a, same, other = _span(1, None, 0), _span(1, None, 0), _span(1, None, 0, name="t")
    b = _span(2, 1, 0)
    out = span_rules.apply([a, b, same, other])
    assert out[:2] == [a, b] and len(out) == 3
    assert out[2].name == "t" and out[2].context.span_id not in (1, 2)
    assert out[2].attributes == {span_rules.DUPLICATE_OF: f"{1:016x}"}
    assert span_rules.apply([a, b]) == [a, b]
