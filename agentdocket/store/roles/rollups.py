"""The rollups role: what the dashboards' hourly rollups need of a database that has them
(their upkeep, marking stale hours and refreshing them, is the dashboards' own:
:mod:`agentdocket.dashboards.upkeep`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any


class Rollups(ABC):
    """A database's support for the dashboards' rollups."""

    @abstractmethod
    def installed(self) -> bool:
        """Whether the rollups' refresh is installed (the dashboards' layer, which `agentdocket
        migrate` installs; a database opened from Python alone may lack it)."""

    @abstractmethod
    def lock_runs(self, conn: Any, trace_ids: Sequence[str]) -> None:
        """Lock these traces' projection rows until ``conn``'s transaction ends, for a
        writer's read-then-write of their hours (two writers changing one run see each
        other's changes)."""

    @abstractmethod
    def refreshing(self) -> AbstractContextManager[Any | None]:
        """A transaction for one step of a refresh, on a connection of the recorder's: one
        snapshot for the step (a mark committed meanwhile stays for the next), no partition
        made or dropped meanwhile, one refresh at a time. It gives None, and no transaction,
        when another refresh is running."""
