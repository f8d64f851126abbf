"""The roles a database plays for the store, each a small abstract class a backend implements
where it supports the role (as pyeventsourcing gives a recorder per role).

Every backend has the core :class:`~agentdocket.store.recorder.Recorder` (connection,
transactions, reads, writes, values). The roles are what only some parts of the store need:

- :class:`~.log.EventLog`: the event log's inserts, a scorer's reads of it, the runs' months;
- :class:`~.arrival_order.ArrivalOrder`: the order events were committed in, and claims on
  runs (what a follower reads by);
- :class:`~.months.Months`: whole months of the log, and their partitions (retention);
- :class:`~.rollups.Rollups`: what the dashboards' hourly rollups need of the database (a
  backend without them, SQLite, has none);
- :class:`~.readers.Readers`: a read-only login for the dashboards (likewise).

A backend's ``open`` makes its recorder and its roles over it, as :class:`Roles`; the store
hands each of its parts the recorder and the roles it works with. Each role has its abstract
contract test (``tests/contract/roles/``), subclassed per backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentdocket.store.recorder import Recorder
from agentdocket.store.roles.arrival_order import ArrivalOrder
from agentdocket.store.roles.log import EventLog
from agentdocket.store.roles.months import Month, Months
from agentdocket.store.roles.readers import Readers
from agentdocket.store.roles.rollups import Rollups


@dataclass(frozen=True)
class Roles:
    """One open database: its recorder and the roles it plays (None: not supported)."""

    recorder: Recorder
    log: EventLog
    arrivals: ArrivalOrder
    months: Months
    rollups: Rollups | None = None
    readers: Readers | None = None

    def close(self) -> None:
        self.recorder.close()


__all__ = ["ArrivalOrder", "EventLog", "Month", "Months", "Readers", "Roles", "Rollups"]
