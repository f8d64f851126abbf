"""The upkeep of what is derived from the projections and kept apart from them: the dashboards'
hourly rollups (:mod:`agentdocket.dashboards.upkeep`).

The store tells an :class:`Upkeep` of every change to the projections, in the transaction that
makes it, so that nothing derived goes stale unmarked: a batch's upserts (``before`` and
``after`` them), a rebuild, a month dropped. And it asks it to refresh. The store knows no
rollup: an upkeep is registered under the entry point group :data:`GROUP` (agentdocket's own
is declared in its ``pyproject.toml``) and made for a database that plays the rollups role.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from importlib.metadata import entry_points
from typing import Any

from agentdocket.store.errors import StoreError
from agentdocket.store.projections import Projection
from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import Roles, Rollups

GROUP = "agentdocket.upkeep"
NAME = "rollups"


@dataclass(frozen=True)
class Refreshed:
    """What a refresh did: the hours it recomputed, by what went stale, and how long it took.
    ``busy`` when another refresh was running (it stopped there; the rest waits for later)."""

    run_hours: int = 0
    verdict_hours: int = 0
    rows: int = 0
    seconds: float = 0.0
    busy: bool = False

    def __str__(self) -> str:
        if self.busy:
            return "another refresh is running; left the rest to it"
        return (
            f"{self.run_hours} run hours and {self.verdict_hours} verdict hours refreshed "
            f"({self.rows:,} rollup rows) in {self.seconds:.2f} s"
        )


class Upkeep(ABC):
    """Told of each change to the projections, in the transaction making it."""

    @abstractmethod
    def before(
        self, conn: Any, proj: Projection, months: dict[str, date], new: frozenset[str]
    ) -> Any:
        """Before ``proj``'s upserts: what the upkeep needs of the rows as they are (given
        back to :meth:`after`). ``new``: the traces nothing stored is about yet (no row of
        theirs to read)."""

    @abstractmethod
    def after(
        self, conn: Any, proj: Projection, months: dict[str, date], before: Any, new: frozenset[str]
    ) -> None:
        """After ``proj``'s upserts (``new`` as for :meth:`before`: their rows are ``proj``'s)."""

    @abstractmethod
    def rebuilding(self, conn: Any) -> None:
        """Every projection row changes (called before the rebuild and after it)."""

    @abstractmethod
    def dropping(self, conn: Any, month: date) -> None:
        """The runs of ``month`` are about to go (retention)."""

    @abstractmethod
    def refresh(
        self, progress: Callable[[int, int], None] | None = None, *, emptied: bool = False
    ) -> Refreshed | None:
        """Bring what is derived up to date; None where it is not installed.
        ``progress(done, total)`` counts its steps. ``emptied``: what is stale is mostly
        what went with dropped months (retention), so there is little left to compute."""


def upkeep_for(roles: Roles) -> Upkeep | None:
    """The upkeep of a database that plays the rollups role; None for one that does not."""
    if roles.rollups is None:
        return None
    return _registered()(roles.recorder, roles.rollups)


@functools.cache
def _registered() -> Callable[[Recorder, Rollups], Upkeep]:
    found = [ep for ep in entry_points(group=GROUP) if ep.name == NAME]
    if not found:
        raise StoreError(
            f"no {NAME!r} upkeep is registered (entry point group {GROUP!r}): this database "
            "has the dashboards' rollups, and writing without marking them would leave them "
            "stale. Install agentdocket (pip install agentdocket, or pip install -e . in a "
            "checkout) so that its entry points are declared"
        )
    factory: Callable[[Recorder, Rollups], Upkeep] = found[0].load()
    return factory
