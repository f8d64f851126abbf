"""Where the store lives: ``AGENTDOCKET_DATABASE_URL``, else ./agentdocket.db (SQLite)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url

__all__ = ["ENV_VAR", "ConfigError", "database_url", "display_url", "parse_url", "psycopg_conninfo"]

from agentdocket.store.backends import parse_url
from agentdocket.store.errors import ConfigError

ENV_VAR = "AGENTDOCKET_DATABASE_URL"
DEFAULT_FILE = "agentdocket.db"


def database_url(explicit: str | None = None) -> str:
    """The URL to use: the explicit one, else the environment, else ./agentdocket.db. A value
    that is a file path rather than a URL (no ``scheme://``) names an SQLite database."""
    given = explicit or os.environ.get(ENV_VAR)
    if not given:
        return f"sqlite:///{Path.cwd() / DEFAULT_FILE}"
    if "://" not in given:
        return f"sqlite:///{Path(given).expanduser().resolve()}"
    return given


def display_url(url: str) -> str:
    """The URL with its password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"


def psycopg_conninfo(url: URL) -> str:
    from psycopg.conninfo import make_conninfo

    params: dict[str, str | int | None] = {
        "host": url.host,
        "port": url.port,
        "dbname": url.database,
        "user": url.username,
        "password": url.password,
    }
    params.update({k: v for k, v in url.query.items() if isinstance(v, str)})
    return make_conninfo("", **{k: v for k, v in params.items() if v is not None})


def sqlite_path(url: URL) -> Path:
    assert url.database
    return Path(url.database)
