"""Schema migrations through Alembic, for PostgreSQL and SQLite alike."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import agentdocket.migrations
from agentdocket.store.config import parse_url

SCRIPT_LOCATION = str(Path(agentdocket.migrations.__file__).parent)


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    return cfg


def _engine(url: str) -> sa.Engine:
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    return sa.create_engine(parsed, poolclass=sa.pool.NullPool)


def head_revision() -> str:
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(url: str) -> str | None:
    engine = _engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()


def _run(url: str, action: str, revision: str) -> None:
    engine = _engine(url)
    cfg = _config()
    try:
        with engine.begin() as conn:
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
