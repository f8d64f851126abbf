"""Group commit: deliveries that arrive together are written together.

Callers (the receiver's request threads, the tracer's exporter) put their events in a lane's
queue, then take the lane's lock. Whoever gets it first delivers everything queued by then,
its own events and the others', as one group: one append, one transaction, one commit; every
request of the group gets the group's outcome. The others find theirs settled when the lock
comes to them, and return at once. So under load a commit carries many requests, and with one
request at a time it carries that one, with no waiting for company. Each caller makes its own
events ready to write (limits, escaping, redaction, their projection: Python's work) before
it queues them, while the group before is being written: the lock is held for the database's
work alone.

With several lanes, each has its own database connection, and a request's events are split
among them by trace id: two lanes do not write the same trace, so their transactions run side
by side without waiting for each other's locks on a run's rows. (A verdict event received for
a run another lane writes is the exception; should the two transactions conflict, the store
retries, as with any concurrent writer.) A request is answered once every lane holding a part
of it has settled that part.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agentdocket.events import Event

if TYPE_CHECKING:
    from agentdocket.store import Store
    from agentdocket.store.appending import Prepared

# What became of a batch: in the database, in the spool, lost (spool full or unwritable), or
# nothing to deliver and the database unreachable.
Delivered = Literal["stored", "spooled", "dropped", "unavailable"]
# The worse of two outcomes of a request's parts is the request's.
_RANK: dict[Delivered, int] = {"stored": 0, "unavailable": 1, "spooled": 2, "dropped": 3}


@dataclass(eq=False)
class Request:
    """One caller's events for one lane, and what became of them once settled."""

    events: list[Event]
    source: str
    n_spans: int = 0  # spans these events came from, counted if they are lost
    outcome: Delivered | None = None
    # the events made ready to write by the caller's thread before it queued them (while
    # another group is written), where the lane's store was at hand
    prepared: Prepared | None = None


class Lane:
    """A queue of requests and the connection (store) that writes them, one group at a
    time."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.lock = threading.Lock()  # held by the one delivering a group on this lane
        self.store: Store | None = None  # opened on first use; closed on an outage
        self._queue: list[Request] = []
        self._queue_lock = threading.Lock()

    def submit(self, request: Request) -> None:
        with self._queue_lock:
            self._queue.append(request)

    def settle(
        self, request: Request, commit: Callable[[Lane, list[Request]], Delivered]
    ) -> Delivered:
        """``request``'s outcome: delivered by whoever took the lock first, this caller or
        another one whose group it joined. ``commit`` delivers a group and never raises."""
        with self.lock:
            if request.outcome is None:
                with self._queue_lock:
                    group, self._queue = self._queue, []
                outcome = commit(self, group)
                for queued in group:
                    queued.outcome = outcome
        assert request.outcome is not None
        return request.outcome


def lane_of(trace_id: str, lanes: int) -> int:
    """The lane of a trace: the same in every process (CRC-32, not Python's salted hash)."""
    return zlib.crc32(trace_id.encode("utf-8", "surrogatepass")) % lanes if lanes > 1 else 0


def split(events: Sequence[Event], lanes: int) -> dict[int, list[Event]]:
    """``events`` by lane, in their order; only lanes with events."""
    if lanes == 1:
        return {0: list(events)} if events else {}
    parts: dict[int, list[Event]] = {}
    for event in events:
        parts.setdefault(lane_of(event.trace_id, lanes), []).append(event)
    return parts


def worst(outcomes: Sequence[Delivered]) -> Delivered:
    """A request's outcome from its parts': it is only as safe as its least safe part."""
    return max(outcomes, key=_RANK.__getitem__)
