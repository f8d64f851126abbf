"""``agentdocket costs``: what model calls cost, priced at each call's time."""

from __future__ import annotations

from pathlib import Path

import click

from agentdocket.commands.common import FORMAT, console, echo_json, new_table, open_from
from agentdocket.costs import PRICES_ENV

PRICES = click.option(
    "--prices",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    envvar=PRICES_ENV,
    help=f"A price file (TOML) over the genai-prices table (or ${PRICES_ENV}).",
)


@click.group(name="costs")
def costs() -> None:
    """What model calls cost: each call priced from its tokens, model and provider at its own
    time (genai-prices, and your price file over it); calls no price covers are unpriced,
    never zero.

    \b
    Examples:
      agentdocket costs refresh
      agentdocket costs refresh --prices prices.toml
      agentdocket costs show --by role
      agentdocket costs show --by agent --judges --format json
    """


@costs.command(name="refresh")
@PRICES
@click.option("--all", "whole", is_flag=True, help="Price every call again, not only new ones.")
@click.pass_context
def refresh_command(ctx: click.Context, prices: Path | None, whole: bool) -> None:
    """Price the log's model calls: the new ones, or every one again when the prices changed
    (another genai-prices, a changed price file) or with --all; the log is not touched.
    `serve` does it every minute, with $AGENTDOCKET_PRICES.

    \b
    Examples:
      agentdocket costs refresh
      agentdocket costs refresh --prices prices.toml
    """
    from agentdocket.costs.prices import price_book
    from agentdocket.costs.refresh import refresh

    book = price_book(prices)
    with open_from(ctx) as store:
        done = refresh(store, book, whole=whole)
    which = "model calls" if done.whole else "new model calls"
    console.print(
        f"{done.calls} {which} priced by {done.version}: {done.unpriced} unpriced",
        markup=False,
    )


@costs.command(name="show")
@click.option(
    "--by",
    "dimension",
    type=click.Choice(["run", "role", "model", "agent", "dataset", "case"]),
    default="agent",
    show_default=True,
    help="What to add the costs up by.",
)
@click.option("--judges", is_flag=True, help="The judges' calls (the cost of evaluating).")
@FORMAT
@click.pass_context
def show_command(ctx: click.Context, dimension: str, judges: bool, fmt: str) -> None:
    """Costs added up (as last priced by `costs refresh`), with the calls no price covers.

    \b
    Examples:
      agentdocket costs show --by role
      agentdocket costs show --by run --format json
    """
    with open_from(ctx) as store:
        rows = store.costs.by(dimension, judges=judges)
        versions = store.costs.priced_by()
    for row in rows:  # the spans' own figure beside ours: how far apart
        told, ours = row["reported_usd"], row["cost_usd"]
        row["difference_usd"] = None if told is None or ours is None else ours - told
    if fmt == "json":
        echo_json({"priced_by": versions, "by": dimension, "rows": rows})
        return
    if not versions:
        console.print("nothing priced yet: run `agentdocket costs refresh`")
        return
    table = new_table(*rows[0].keys()) if rows else new_table("cost_usd")
    for row in rows:
        table.add_row(
            *(
                "-" if v is None else f"{v:.6f}" if isinstance(v, float) else str(v)
                for v in row.values()
            )
        )
    console.print(table)
    console.print(f"priced by {', '.join(versions)}", markup=False)
