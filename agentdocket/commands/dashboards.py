"""``agentdocket refresh-dashboards``, and the periodic refresh ``agentdocket serve`` runs."""

from __future__ import annotations

import threading
import time

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TimeRemainingColumn,
)

from agentdocket.commands.common import console, err, open_from
from agentdocket.store import open_store
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
    """
    with open_from(ctx) as store:
        while True:
            with Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err,
                transient=True,
            ) as bar:
                task = bar.add_task("refreshing stale hours", total=None)

                def advance(n: int, total: int, task: TaskID = task) -> None:
                    bar.update(task, completed=n, total=total)

                done = store.refresh_dashboards(advance)
            if done is None:
                raise click.ClickException(
                    "the dashboards read PostgreSQL; this database has no rollups"
                )
            console.print(str(done))
            if every is None:
                return
            time.sleep(every)


class Refresher(threading.Thread):
    """Refreshes the rollups every ``every`` seconds until stopped; a failure (the database
    away, say) is logged and tried again next time, never raised."""

    def __init__(self, url: str, every: float) -> None:
        super().__init__(name="agentdocket-dashboards", daemon=True)
        self.url = url
        self.every = every
        self.stopped = threading.Event()
        self.last: Refreshed | None = None

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            try:
                with open_store(self.url, migrate=False) as store:
                    self.last = store.refresh_dashboards()
            except Exception as exc:  # the receiver must keep running
                err.print(f"[yellow]refreshing the dashboards failed (will retry):[/] {exc}")

    def stop(self) -> None:
        self.stopped.set()
