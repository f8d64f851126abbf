"""Where the store lives: ``AGENTDOCKET_DATABASE_URL``, else ./agentdocket.db (SQLite)."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from agentdocket.errors import AgentdocketError

ENV_VAR = "AGENTDOCKET_DATABASE_URL"
DEFAULT_FILE = "agentdocket.db"


class ConfigError(AgentdocketError, ValueError):
    """A database URL agentdocket cannot use."""


def database_url(explicit: str | None = None) -> str:
    """The URL to use: the explicit one, else the environment, else ./agentdocket.db."""
    if explicit:
        return explicit
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return from_env
    return f"sqlite:///{Path.cwd() / DEFAULT_FILE}"


def parse_url(url: str) -> URL:
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
        raise ConfigError(f"{url!r} is not a database URL ({exc})") from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        if parsed.get_driver_name() not in ("psycopg", "default", "postgresql"):
            raise ConfigError(
                f"{ENV_VAR}: use the psycopg 3 driver, 'postgresql+psycopg://...' (got {url!r})"
            )
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise ConfigError(
                "an in-memory SQLite database would vanish with the process; give a file: "
                "sqlite:///path/to/agentdocket.db"
            )
        return parsed
    raise ConfigError(
        f"unsupported database {backend!r} in {url!r}: use postgresql+psycopg://... or sqlite:///..."
    )


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
