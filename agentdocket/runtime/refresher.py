"""The dashboards' rollups refreshed every so often (PostgreSQL), on a thread of its own, and
the model calls that arrived since the last pass priced (``call_costs``, with the price file
``$AGENTDOCKET_PRICES`` names, if any)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from agentdocket.costs.prices import price_book_from_env
from agentdocket.costs.refresh import refresh as refresh_costs
from agentdocket.runtime import Say
from agentdocket.store import Store
from agentdocket.store.arrivals import Position
from agentdocket.store.upkeep import Refreshed

log = logging.getLogger("agentdocket.dashboards")


class Refresher(threading.Thread):
    """Refreshes the rollups every ``every`` seconds until stopped; a failure (the database
    away, say) is logged and tried again next time, never raised. ``say`` (if given) hears
    what each refresh did."""

    def __init__(self, open: Callable[[], Store], every: float, *, say: Say | None = None) -> None:
        super().__init__(name="agentdocket-dashboards", daemon=True)
        self.open = open  # a store of its own for each pass
        self.every = every
        self.say = say
        self.stopped = threading.Event()
        self.last: Refreshed | None = None
        # where the calls were priced up to: each pass reads only the calls since
        self.priced_upto: Position | None = None

    def run(self) -> None:
        while True:
            try:
                with self.open() as store:
                    self.last = store.projections.refresh_dashboards()
                    priced = refresh_costs(store, price_book_from_env(), after=self.priced_upto)
                    self.priced_upto = priced.position
                if self.say is not None:
                    self.say(str(self.last))
            except Exception as exc:  # whoever runs this (the receiver) must keep running
                log.warning("refreshing the dashboards failed (will retry): %s", exc)
            if self.stopped.wait(self.every):
                return

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive():
            self.join()
