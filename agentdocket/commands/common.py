"""What the command modules share: the consoles and opening the store."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console

from agentdocket.store import ConfigError, Store, StoreError, database_url, open_store

# Piped output (CI logs, files) is not squeezed to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)


@contextmanager
def open_from(ctx: click.Context) -> Iterator[Store]:
    """The store named by --database / AGENTDOCKET_DATABASE_URL; errors as click errors."""
    url = database_url(ctx.obj.get("url"))
    try:
        store = open_store(url)
    except (ConfigError, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    try:
        yield store
    finally:
        store.close()
