"""Several processes appending to the same traces at once: nothing lost, nothing duplicated."""

from __future__ import annotations

import multiprocessing as mp
import random
from collections.abc import Callable
from typing import Any

from agentdocket.events import Event, RunStarted
from agentdocket.store import open_store
from agentdocket.store.backends.postgres.locks import FINE_LIMIT
from tests.helpers.db import projections
from tests.helpers.factory import T0, many_runs

WRITERS = 4


def _writer(url: str, events: list[Event], seed: int) -> None:
    rng = random.Random(seed)
    mine = events[:]
    rng.shuffle(mine)
    with open_store(url) as store:
        for start in range(0, len(mine), 97):
            store.append(mine[start : start + 97])


def _race(work: list[tuple[Callable[..., None], tuple[Any, ...]]], timeout: float) -> None:
    """Each ``(target, args)`` in a process of its own, all at once; every one succeeds."""
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=args) for target, args in work]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        assert p.exitcode == 0


def test_four_processes_append_the_same_traces(url: str) -> None:
    events = many_runs(200, seed=11)
    open_store(url).close()  # migrate once, before the race
    # Every process sends three quarters of all events, in its own order, so every trace is
    # written by several processes at once and most events arrive more than once.
    shares = [[e for i, e in enumerate(events) if i % WRITERS != w] for w in range(WRITERS)]
    _race([(_writer, (url, share, w)) for w, share in enumerate(shares)], 300)
    with open_store(url) as store:
        assert store.reader.counts()["events"] == len(events)
        stored = {e.event_id for t in store.reader.trace_ids() for e in store.reader.events(t)}
        assert stored == {e.event_id for e in events}
        incremental = projections(store)
        # verdicts judge runs; they are not counted into them
        run_events = [e for e in events if e.kind != "verdict"]
        assert sum(r["n_events"] for r in incremental["runs"]) == len(run_events)
        store.projections.rebuild()
        assert projections(store) == incremental


def _big_writer(url: str, events: list[Event]) -> None:
    with open_store(url) as store:
        store.append(events, batch_size=len(events))  # one transaction, every trace at once


def test_a_batch_of_more_traces_than_the_lock_limit_and_small_batches_at_once(url: str) -> None:
    """Past FINE_LIMIT traces a transaction locks every trace of a kind at once (PostgreSQL's
    lock table is bounded); small batches locking trace by trace run beside it, on the same
    traces, and the projections still come out as a rebuild makes them."""
    events = many_runs(FINE_LIMIT + 200, seed=5)
    open_store(url).close()
    small = [(_writer, (url, events[w::2], w)) for w in range(2)]
    _race([(_big_writer, (url, events)), *small], 600)
    with open_store(url) as store:
        assert store.reader.counts()["events"] == len(events)
        incremental = projections(store)
        store.projections.rebuild()
        assert projections(store) == incremental


def test_an_import_of_many_traces_in_one_transaction(url: str) -> None:
    """An import is one transaction: 12,000 new traces there locked one by one would be two
    advisory locks each, more than PostgreSQL's lock table holds by default."""
    events = [
        Event.create(
            trace_id=f"{i + 1:032x}",
            span_id=f"{i + 1:016x}",
            seq=0,
            ts=T0,
            payload=RunStarted(agent="bulk", question=f"q{i}"),
        )
        for i in range(12_000)
    ]
    with open_store(url) as store:
        assert store.import_all([], events).inserted == len(events)
        assert store.reader.counts()["events"] == len(events)
        assert len(store.reader.trace_ids()) == len(events)
