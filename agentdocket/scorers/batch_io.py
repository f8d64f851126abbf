"""A scoring run's batches read ahead and written behind: the next batch is read on a second
connection while one is scored, and a batch's verdicts are appended on a third while the next
is scored, so that the database works while Python does."""

from __future__ import annotations

import gc
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from agentdocket.events import Event, Trace
from agentdocket.store import Store, open_store
from agentdocket.store.scoring_reads import CaseCache


@contextmanager
def frozen_heap() -> Iterator[None]:
    """The objects alive now left out of the collector's full passes while a scoring run
    makes and drops its batches (``gc.freeze``; the garbage of the batches is collected as
    before). In the runner the full passes over a process's long-lived objects cost 20-40 us
    per trace. Nothing is done where objects are frozen already (a server froze its own)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def written_behind(store: Store, ahead: bool) -> Iterator[Callable[[list[Event]], object]]:
    """A batch's verdicts appended by a thread on a connection of its own while the next
    batch is scored (``ahead``; else by ``store.append`` at once). One batch waits at most;
    the block ends once every batch is written, and a failed write is raised in the caller.
    Batches hold different runs: a batch's check for verdicts already given never needs the
    one being written."""
    if not ahead:
        yield store.append
        return
    handoff: queue.Queue[list[Event] | None] = queue.Queue(maxsize=1)
    failed: list[BaseException] = []

    def drain() -> None:
        try:
            with open_store(store.url) as writer:
                while (events := handoff.get()) is not None:
                    writer.append(events)
        except BaseException as exc:
            failed.append(exc)
            while handoff.get() is not None:  # let the caller go on to see the failure
                pass

    def write(events: list[Event]) -> None:
        if failed:
            raise failed[0]
        handoff.put(events)

    thread = threading.Thread(target=drain, name="agentdocket-score-writer", daemon=True)
    thread.start()
    try:
        yield write
    finally:
        handoff.put(None)
        thread.join()
    if failed:
        raise failed[0]


def prefetched(
    store: Store, kinds: frozenset[str] | None, batches: list[list[str]]
) -> Iterator[list[Trace]]:
    """The batches, each read on a second connection by a thread while the previous one is
    scored and written (the database works on one while Python works on the other)."""
    if len(batches) <= 1:
        for batch in batches:
            yield store.scoring.traces(batch, kinds)
        return
    handoff: queue.Queue[list[Trace] | BaseException | None] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def put(item: list[Trace] | BaseException | None) -> bool:
        while not stop.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def read() -> None:
        try:
            with open_store(store.url) as reader:
                cases: CaseCache = {}
                for batch in batches:
                    if not put(reader.scoring.traces(batch, kinds, cases)):
                        return
        except BaseException as exc:
            put(exc)
            return
        put(None)

    reader = threading.Thread(target=read, name="agentdocket-score-reader", daemon=True)
    reader.start()
    try:
        while (item := handoff.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        reader.join()
