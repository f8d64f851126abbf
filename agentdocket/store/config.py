"""Where the store lives: ``AGENTDOCKET_DATABASE_URL``, else ./agentdocket.db (SQLite)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "ConfigError", "database_url", "display_url", "parse_url", "psycopg_conninfo"]

from agentdocket.store.backends import parse_url
from agentdocket.store.errors import ConfigError
from agentdocket.store.urls import display_url, psycopg_conninfo

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
