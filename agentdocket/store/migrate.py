"""Schema migrations through Alembic, for PostgreSQL and SQLite alike."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import agentdocket.migrations
from agentdocket.store.config import display_url, parse_url
from agentdocket.store.errors import StoreError

SCRIPT_LOCATION = str(Path(agentdocket.migrations.__file__).parent)


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    return cfg


def _engine(url: str) -> sa.Engine:
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database
        try:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{display_url(url)}: cannot create its folder ({exc})") from None
    return sa.create_engine(parsed, poolclass=sa.pool.NullPool)


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


@contextmanager
def _mapped(url: str) -> Iterator[None]:
    """SQLAlchemy's wrapped driver errors as the store's (see :mod:`agentdocket.store.errors`)."""
    try:
        yield
    except sa.exc.DBAPIError as exc:
        orig = exc.orig
        if isinstance(orig, sqlite3.Error):
            from agentdocket.store.sqlite import classify as classify_sqlite

            mapped = classify_sqlite(orig)
        else:
            import psycopg

            from agentdocket.store.postgres import classify as classify_pg

            if not isinstance(orig, psycopg.Error):
                raise
            mapped = classify_pg(orig)
        raise type(mapped)(f"{display_url(url)}: {mapped}", code=mapped.code) from exc


def current_revision(url: str) -> str | None:
    engine = _engine(url)
    try:
        with _mapped(url), engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def _run(url: str, action: str, revision: str) -> None:
    engine = _engine(url)
    cfg = _config()
    try:
        with _mapped(url), engine.begin() as conn:
            cfg.attributes["connection"] = conn
            if action == "upgrade":
                command.upgrade(cfg, revision)
            else:
                command.downgrade(cfg, revision)
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head") -> None:
    _run(url, "upgrade", revision)


def downgrade(url: str, revision: str = "base") -> None:
    _run(url, "downgrade", revision)
