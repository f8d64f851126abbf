"""``agentdocket refresh-dashboards``: once, or every so often (agentdocket.runtime.refresher)."""

from __future__ import annotations

import click

from agentdocket.commands.common import console, open_from, progress_bar


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
    from agentdocket.store import database_url, display_url
    from agentdocket.store.backends import backend_of

    url = database_url(ctx.obj.get("url"))
    if not backend_of(url).rollups:
        raise click.ClickException(
            f"{display_url(url)} has no dashboard rollups: the dashboards read PostgreSQL"
        )
    if every is None:
        with open_from(ctx) as store, progress_bar("refreshing stale hours") as advance:
            console.print(str(store.projections.refresh_dashboards(advance)))
    else:
        from agentdocket.runtime.refresher import Refresher
        from agentdocket.store import Opener

        refresher = Refresher(Opener(url, migrate=False), every, say=console.print)
        refresher.run()  # here, until interrupted
