"""Reading one trace in parts, on every backend: its events in keyset pages give the trace in
its order (ties of seq and time broken by event id across a page's edge), its pages of steps
put together are its steps, and the streaming export writes the bytes of the whole one."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest

from agentdocket.events import Event, RunFinished, RunStarted, ToolCalled, ToolReturned
from agentdocket.importers.interchange_export import (
    export_records,
    write_jsonl,
    write_traces_jsonl,
)
from agentdocket.store import open_store
from tests.helpers.factory import T0
from tests.helpers.fresh import EVERY, fresh_url


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _run(n: int, tools: int) -> list[Event]:
    """A run whose tool calls share their seq, and ten at a time their time: its order among
    them is its events' ids'."""
    trace = uuid.UUID(int=n + 1).hex
    root = f"{n + 1:016x}"
    events = [Event.create(trace_id=trace, span_id=root, seq=0, ts=T0, payload=RunStarted("a"))]
    for i in range(tools):
        span = f"{n + 1:08x}{i + 1:08x}"
        at = T0 + timedelta(milliseconds=i // 10)
        for payload in (
            ToolCalled(call_id=span, tool="lookup", arguments={"i": i}),
            ToolReturned(call_id=span, tool="lookup", result=i),
        ):
            events.append(
                Event.create(
                    trace_id=trace, span_id=span, parent_span_id=root, seq=0, ts=at, payload=payload
                )
            )
    end = T0 + timedelta(seconds=1)
    events.append(
        Event.create(trace_id=trace, span_id=root, seq=1, ts=end, payload=RunFinished("ok"))
    )
    return events


def test_a_trace_read_in_pages_is_the_trace_read_whole(url: str) -> None:
    big, small = _run(0, 20), [_run(n, 1) for n in range(1, 5)]
    with open_store(url) as store:
        store.append([*big, *(e for run in small for e in run)])
        trace = big[0].trace_id
        whole = store.reader.events(trace)
        assert len(whole) == 42
        for page in (1, 7, 42, 100):
            assert list(store.trace_pages.events(trace, page)) == whole
        pages = [store.trace_pages.steps_page(trace, k, 5) for k in range(1, 10)]
        assert [e for p in pages for e in p] == whole  # no verdict, no label: every event
        assert [len(p) for p in pages] == [5] * 8 + [2]
        assert store.trace_pages.count_steps(trace) == 42
        summary = store.trace_pages.summary(trace)
        assert summary is not None
        assert summary.kinds == {
            "tool.called": 20,
            "tool.returned": 20,
            "run.finished": 1,
            "run.started": 1,
        }
        assert summary.failing == 0 and summary.input_tokens is None

        expected = io.BytesIO()
        write_jsonl(export_records(store), expected)
        for batch in (3, 7, 5_000):  # the large trace in pages; the small ones batched
            streamed = io.BytesIO()
            assert write_traces_jsonl(store, streamed, batch_events=batch) == 5
            assert streamed.getvalue() == expected.getvalue()
