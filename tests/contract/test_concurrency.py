"""Several processes appending to the same traces at once: nothing lost, nothing duplicated."""

from __future__ import annotations

import multiprocessing as mp
import random

from agentdocket.events import Event
from agentdocket.store import open_store
from tests.helpers.db import projections
from tests.helpers.factory import many_runs

WRITERS = 4


def _writer(url: str, events: list[Event], seed: int) -> None:
    rng = random.Random(seed)
    mine = events[:]
    rng.shuffle(mine)
    with open_store(url) as store:
        for start in range(0, len(mine), 97):
            store.append(mine[start : start + 97])


def test_four_processes_append_the_same_traces(url: str) -> None:
    events = many_runs(200, seed=11)
    open_store(url).close()  # migrate once, before the race
    # Every process sends three quarters of all events, in its own order, so every trace is
    # written by several processes at once and most events arrive more than once.
    ctx = mp.get_context("spawn")
    procs = []
    for w in range(WRITERS):
        share = [e for i, e in enumerate(events) if i % WRITERS != w]
        procs.append(ctx.Process(target=_writer, args=(url, share, w)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
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
