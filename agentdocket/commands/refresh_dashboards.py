"""``agentdocket refresh-dashboards``, and the periodic refresh ``agentdocket serve`` runs."""

from __future__ import annotations

import threading

import click

from agentdocket.commands.common import console, err, open_from, progress_bar
from agentdocket.store import database_url, display_url, open_store
from agentdocket.store.config import parse_url
from agentdocket.store.rollups import Refreshed


@click.command(name="refresh-dashboards")
@click.option(
    "--every",
    type=click.FloatRange(min=0, min_open=True),
    help="Keep refreshing, every this many seconds, until interrupted.",
)
@click.pass_context
def refresh_dashboards(ctx: click.Context, every: float | None) -> None:
    """Bring the dashboards' hourly rollups up to date (PostgreSQL).

    Panels are exact without it (hours not yet rolled up are read live) but get slower as such
    hours pile up. ``agentdocket score`` refreshes after scoring and ``agentdocket serve``
    every minute; run this after bulk imports, or with --every where neither runs.

    \b
    Examples:
      agentdocket refresh-dashboards
      agentdocket refresh-dashboards --every 60
    """
    url = database_url(ctx.obj.get("url"))
    if parse_url(url).get_backend_name() != "postgresql":
        raise click.ClickException(
            f"{display_url(url)} has no dashboard rollups: the dashboards read PostgreSQL"
        )
    if every is None:
        with open_from(ctx) as store, progress_bar("refreshing stale hours") as advance:
            console.print(str(store.refresh_dashboards(advance)))
    else:
        Refresher(url, every, report=True).run()  # here, until interrupted


class Refresher(threading.Thread):
    """Refreshes the rollups every ``every`` seconds until stopped; a failure (the database
    away, say) is logged and tried again next time, never raised."""

    def __init__(self, url: str, every: float, *, report: bool = False) -> None:
        super().__init__(name="agentdocket-dashboards", daemon=True)
        self.url = url
        self.every = every
        self.report = report
        self.stopped = threading.Event()
        self.last: Refreshed | None = None

    def run(self) -> None:
        while True:
            try:
                with open_store(self.url, migrate=False) as store:
                    self.last = store.refresh_dashboards()
                if self.report:
                    console.print(str(self.last))
            except Exception as exc:  # whoever runs this (the receiver) must keep running
                err.print(f"[yellow]refreshing the dashboards failed (will retry):[/] {exc}")
            if self.stopped.wait(self.every):
                return

    def stop(self) -> None:
        self.stopped.set()
