"""What the command modules share: the consoles, tables, progress bars and opening the store.

Importing a command module costs little: the command line imports every one to list them
(``agentdocket --help``), so what is heavy (the store and SQLAlchemy, rich's console, the
scorers) is imported where a command runs, and the consoles are made when first written to.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from agentdocket.store import Store

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
        from agentdocket.events import format_ts

        return format_ts(value)
    return str(value)


class _Later:
    """A rich console made when first used (rich's import is a fifth of a second)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


def real(later: Console) -> Console:
    """The rich console behind :data:`console` or :data:`err` (for what takes a console)."""
    made = getattr(later, "_console", None)
    if made is None and isinstance(later, _Later):
        later.size  # noqa: B018 (any attribute makes it)
        made = later._console
    return made if made is not None else later


# Piped output (CI logs, files) is not squeezed to 80 columns.
console = cast("Console", _Later(width=None if sys.stdout.isatty() else 160))
err = cast("Console", _Later(stderr=True, soft_wrap=True))


def new_table(*args: Any, **kwargs: Any) -> Table:
    """A rich table (rich imported now)."""
    from rich.table import Table

    return Table(*args, **kwargs)


def existing_database(url: str, *, create: bool = False) -> str:
    """``url`` if it names a database that exists. An SQLite file that is not there is refused
    when reading, naming it (a mistyped path would otherwise be a new, empty database that reads
    as "all my data is gone"); a command that writes (``create``) makes it, migrated, and says
    so, in a folder that exists: a path whose folder is missing is taken for a mistyped one."""
    from agentdocket.store.backends import backend_of
    from agentdocket.store.config import parse_url

    parsed = parse_url(url)
    path = parsed.database
    if backend_of(parsed).embedded and path and not Path(str(path)).is_file():
        if not create or not Path(str(path)).parent.is_dir():
            raise click.ClickException(
                f"{path}: no such agentdocket database (`agentdocket migrate` creates one, as "
                "does any command that writes; --database or $AGENTDOCKET_DATABASE_URL names "
                "another)"
            )
        from agentdocket import dashboards
        from agentdocket.store.migrate import upgrade

        upgrade(url, derived=dashboards.objects())
        err.print(f"created the agentdocket database {path}", highlight=False)
    return url


def shorten(text: str | None, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters ("-" for none), for a table cell."""
    if not text:
        return "-"
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def resolve_trace(store: Store, given: str, *, stored: bool = True) -> str:
    """The full trace id ``given`` abbreviates (its first characters, as `runs list` shows
    them): one stored run must start so. A full 32-hex id is taken as it is when ``stored``
    is False (a label may come before its run)."""
    wanted = given.strip().lower()
    if not stored and len(wanted) == 32 and all(c in "0123456789abcdef" for c in wanted):
        return wanted
    matches = store.reader.trace_ids_with_prefix(wanted)
    if not matches:
        raise click.ClickException(f"no run with a trace id starting {given!r}")
    if len(matches) > 1:
        raise click.ClickException(
            f"{given!r} matches several runs: {', '.join(matches)}; give more characters"
        )
    return matches[0]


def schemaless(url: str) -> None:
    """Refuse a database with no agentdocket schema (one migrated down to ``base``): a command
    that only reads does not make it again, silently showing nothing."""
    from agentdocket.store import display_url
    from agentdocket.store import migrate as migrations

    if migrations.current_revision(url) is None:
        raise click.ClickException(
            f"{display_url(url)} has no agentdocket schema (migrated down to base?): "
            "`agentdocket migrate` makes it"
        )


def confirm(ctx: click.Context, yes: bool, what: str) -> None:
    """Go on with something that cannot be undone only when ``yes`` (``--yes``) or a person at
    a terminal says so; else exit 1 saying why, having changed nothing."""
    if yes:
        return
    if sys.stdin.isatty():
        if click.confirm(f"{what}. Go on?", default=False, err=True):
            return
        raise click.ClickException("nothing was changed")
    raise click.ClickException(f"{what}: give --yes to go on (nothing was changed)")


@contextmanager
def open_from(ctx: click.Context, *, create: bool = False) -> Iterator[Store]:
    """The store named by --database / AGENTDOCKET_DATABASE_URL; errors as click errors. It
    must exist, unless the command writes (``create``): then an SQLite database that is not
    there is made (:func:`existing_database`)."""
    from agentdocket import dashboards
    from agentdocket.store import ConfigError, StoreError, database_url, display_url, open_store

    try:
        url = existing_database(database_url(ctx.obj.get("url")), create=create)
        if not create:
            schemaless(url)
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
def _progress(description: str) -> Iterator[tuple[Any, Callable[[int, int], None]]]:
    """A rich progress display on stderr, gone when done, with one task for ``description``:
    the display, and ``advance(done, total)`` for that task."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=real(err),
        transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield bar, advance


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, gone when done; yields ``advance(done, total)``."""
    with _progress(description) as (_, advance):
        yield advance


@contextmanager
def scoring_progress(description: str) -> Iterator[Callable[[int, int], None]]:
    """:func:`progress_bar`, with a second line counting the judge calls made as each returns
    (a judge's batch may take minutes before its runs count as done; in this process only:
    worker processes of ``--workers`` count their runs alone)."""
    from agentdocket.scorers.judges.client import observing_calls

    with _progress(description) as (bar, advance):
        calls = bar.add_task("judge calls made", total=None, visible=False)

        def called(model: str) -> None:
            bar.update(calls, advance=1, visible=True, description=f"judge calls made ({model})")

        with observing_calls(called):
            yield advance
