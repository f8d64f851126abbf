"""A database URL's parts as the drivers take them, and as messages show it (SQLAlchemy's
:class:`~sqlalchemy.engine.URL`, parsed and checked by its backend in
:mod:`agentdocket.store.backends`)."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url


def display_url(url: str | URL) -> str:
    """The URL with its password hidden, for messages."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
        return parsed.render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"


def psycopg_conninfo(url: URL) -> str:
    """psycopg's connection string for a PostgreSQL URL (its query parameters kept)."""
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
