"""Group commit through the sink on a real database: many callers at once, on several
connections split by trace id; every event stored once, every run's projection whole."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentdocket.events import Event, RunStarted, ToolCalled
from agentdocket.ingest.sink import Sink
from agentdocket.store import Store, open_store

CALLERS, REQUESTS, TRACES = 6, 15, 4  # each request: a step of each of 4 runs


def _request(caller: int, n: int) -> list[Event]:
    t0 = datetime.now(UTC) - timedelta(minutes=5)
    events = []
    for k in range(TRACES):
        # every caller writes runs of its own, and runs every caller writes
        trace = f"{caller + 1:016x}{k + 1:016x}" if k else f"{n + 1:032x}"
        payload = (
            RunStarted(agent="a")
            if n == 0 and k
            else ToolCalled(call_id=f"{caller}-{n}", tool="sql", arguments={"n": n})
        )
        events.append(
            Event.create(
                trace_id=trace,
                span_id=f"{caller * 1000 + n + 1:016x}",
                seq=caller * 1000 + n,
                ts=t0 + timedelta(milliseconds=n),
                payload=payload,
            )
        )
    return events


@pytest.mark.parametrize("connections", [1, 3])
def test_callers_at_once_on_several_connections_store_every_event_once(
    url: str, tmp_path: Path, connections: int
) -> None:
    opened: list[Store] = []

    def factory() -> Store:
        store = open_store(url)
        opened.append(store)
        return store

    sink = Sink(url, spool_dir=tmp_path, store_factory=factory, connections=connections)
    outcomes: list[str] = []
    start = threading.Barrier(CALLERS)

    def caller(i: int) -> None:
        start.wait()
        for n in range(REQUESTS):
            outcomes.append(sink.deliver(_request(i, n), source=f"caller {i}"))

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sink.deliver([]) == "stored"  # nothing to deliver: answered at once
    sink.close()
    assert outcomes == ["stored"] * CALLERS * REQUESTS
    # one connection per lane where writers run at once (SQLite: one write lock, one lane)
    assert len(opened) == (connections if "postgresql" in url else 1)
    sent = [e for i in range(CALLERS) for n in range(REQUESTS) for e in _request(i, n)]
    with open_store(url) as store:
        rows = store.reader.rows("events", "event_id")
        assert sorted(r["event_id"] for r in rows) == sorted(str(e.event_id) for e in sent)
        assert sink.stats.delivered == len(sent) and sink.stats.refused == 0
        for trace in {e.trace_id for e in sent}:  # each run's row counts all of its events
            run = store.reader.run(trace)
            assert run is not None
            assert run["n_events"] == sum(e.trace_id == trace for e in sent)


def test_a_request_is_prepared_before_its_group_and_stored_if_preparing_fails(
    url: str, tmp_path: Path
) -> None:
    """Once its lane has a store, a request's events are made ready on the caller's thread
    before they are queued, and the group writes them as made; should preparing fail, the
    append prepares them again. Either way every event is stored once."""
    used: list[str] = []
    failing = threading.Event()

    def factory() -> Store:
        store = open_store(url)
        prepare, append, append_prepared = store.prepare, store.append, store.append_prepared

        def preparing(events: list[Event]) -> object:
            if failing.is_set():
                raise RuntimeError("a fault of ours while preparing")
            return prepare(events)

        def appending(events: list[Event], **kw: object) -> object:
            used.append("append")
            return append(events, **kw)  # type: ignore[arg-type]

        def appending_prepared(batches: list[object], **kw: object) -> object:
            used.append("prepared")
            return append_prepared(batches, **kw)  # type: ignore[arg-type]

        store.prepare = preparing  # type: ignore[method-assign,assignment]
        store.append = appending  # type: ignore[method-assign,assignment]
        store.append_prepared = appending_prepared  # type: ignore[method-assign,assignment]
        return store

    sink = Sink(url, spool_dir=tmp_path, store_factory=factory)
    sent = [_request(0, n) for n in range(3)]
    assert sink.deliver(sent[0]) == "stored"  # the lane's store is opened by this one
    assert sink.deliver(sent[1]) == "stored"
    failing.set()
    assert sink.deliver(sent[2]) == "stored"
    sink.close()
    assert used == ["append", "prepared", "append"]
    with open_store(url) as store:
        rows = store.reader.rows("events", "event_id")
        assert sorted(r["event_id"] for r in rows) == sorted(
            str(e.event_id) for batch in sent for e in batch
        )
