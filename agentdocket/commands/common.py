"""What the command modules share: the consoles, progress bars and opening the store."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from agentdocket.events import format_ts
from agentdocket.store import (
    ConfigError,
    Store,
    StoreError,
    database_url,
    display_url,
    open_store,
)
from agentdocket.store.backends import backend_of
from agentdocket.store.config import parse_url

# The option of every command that prints a table.
FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format: a table, or JSON for scripts.",
)


def echo_json(value: object) -> None:
    """``value`` as JSON on standard output (times as ISO 8601, anything else by str)."""
    click.echo(json.dumps(value, default=_jsonable, ensure_ascii=False))


def _jsonable(value: object) -> object:
    if isinstance(value, datetime):
        return format_ts(value)
    return str(value)


# Piped output (CI logs, files) is not squeezed to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


def existing_database(url: str) -> str:
    """``url`` if it names a database that exists: an SQLite file that is not there is refused,
    naming it (a mistyped path would otherwise be a new, empty database that reads as "all my
    data is gone"); only ``migrate`` and ``demo`` create one."""
    parsed = parse_url(url)
    path = parsed.database
    if backend_of(parsed).embedded and path and not Path(str(path)).is_file():
        raise click.ClickException(
            f"{path}: no such agentdocket database (`agentdocket migrate` creates one; "
            "--database or $AGENTDOCKET_DATABASE_URL names another)"
        )
    return url


@contextmanager
def open_from(ctx: click.Context) -> Iterator[Store]:
    """The store named by --database / AGENTDOCKET_DATABASE_URL, which must exist; errors as
    click errors."""
    from agentdocket import dashboards

    try:
        url = existing_database(database_url(ctx.obj.get("url")))
        store = open_store(url, derived=dashboards.objects())
    except (ConfigError, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    if not store.derived_current:
        err.print(
            f"[yellow]note:[/] the dashboard views of {display_url(url)} are not this "
            "agentdocket's: run `agentdocket migrate`"
        )
    try:
        yield store
    finally:
        store.close()


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, gone when done; yields ``advance(done, total)``."""
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance
