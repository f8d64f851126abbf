"""What differs by database before a store is open: one record per backend, in one place.

Once a connection is open, what differs (SQL, bulk inserts, locks, driver errors) belongs to
the backend's recorder and roles (:mod:`agentdocket.store.roles`), each backend a package of
this one (:mod:`.sqlite`, :mod:`.postgres`, :mod:`.citus`). Before that, a few things differ:
how to open one, whether the database is a file on this machine, whether opening it may
bring its schema to the head revision, whether it has the dashboards' rollups and partitions,
its driver's parameter marker, how its URL is checked. They are fields of :class:`Backend`,
and code elsewhere asks for a capability (``backend_of(url).rollups``), never for a name.
Adding a backend means adding a record here and a package with its recorder and the roles it
plays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.engine import URL, Connection, make_url

from agentdocket.store.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from agentdocket.store.roles import Roles


@dataclass(frozen=True)
class Backend:
    """One database agentdocket stores into."""

    name: str  # SQLAlchemy's backend name, as in the URL
    # opens the database at the URL ``check`` gave: its recorder and roles (the backend's
    # modules imported then)
    opener: Callable[[URL], Roles]
    # a file on this machine: a missing one is a mistyped path (only migrate and demo make one)
    embedded: bool
    # open_store brings an older schema to the head revision (a shared server is upgraded only
    # by `agentdocket migrate`)
    upgrades_on_open: bool
    # the dashboards' hourly rollups, their refresh and the Grafana role (its databases play
    # the rollups and readers roles)
    rollups: bool
    partitions: bool  # monthly partitions of the log and projections
    placeholder: str  # the driver's parameter marker
    # writers in separate transactions at once (SQLite has one write lock: one writer)
    concurrent_writers: bool
    check: Callable[[URL, str], URL]  # the URL (parsed, as given), checked and normalised
    # a driver error as the store's (agentdocket.store.errors), None for another driver's
    classify: Callable[[BaseException], StoreError | None]
    # query parameters a live writer adds to the URL unless given (a bounded connect)
    live_query: Mapping[str, str] = field(default_factory=dict)
    # what `agentdocket migrate` does in its transaction once at the head revision, and
    # before a downgrade (a SQLAlchemy connection)
    at_head: Callable[[Connection], None] | None = None
    before_downgrade: Callable[[Connection], None] | None = None

    def open(self, url: str) -> Roles:
        """The database at ``url``, open: its recorder and the roles it plays."""
        return self.opener(self.check(make_url(url), url))


def _postgres(url: URL) -> Roles:
    """A PostgreSQL database, or a Citus coordinator (psycopg imported now)."""
    from agentdocket.store.backends.citus.recorder import open_postgres

    return open_postgres(url)


def _sqlite(url: URL) -> Roles:
    from agentdocket.store.backends.sqlite import open_sqlite

    return open_sqlite(url)


def _postgres_errors(exc: BaseException) -> StoreError | None:
    import psycopg

    from agentdocket.store.backends.postgres.errors import classify

    return classify(exc) if isinstance(exc, psycopg.Error) else None


def _sqlite_errors(exc: BaseException) -> StoreError | None:
    import sqlite3

    from agentdocket.store.backends.sqlite.recorder import classify

    return classify(exc) if isinstance(exc, sqlite3.Error) else None


def _postgres_at_head(conn: Connection) -> None:
    from agentdocket.store.backends.postgres.schema import at_head

    at_head(conn)


def _postgres_before_downgrade(conn: Connection) -> None:
    from agentdocket.store.backends.postgres.schema import before_downgrade

    before_downgrade(conn)


def _postgres_url(parsed: URL, url: str) -> URL:
    if parsed.get_driver_name() not in ("psycopg", "default", "postgresql"):
        raise ConfigError(f"use the psycopg 3 driver, 'postgresql+psycopg://...' (got {url!r})")
    return parsed.set(drivername="postgresql+psycopg")


def _sqlite_url(parsed: URL, url: str) -> URL:
    if not parsed.database or parsed.database == ":memory:":
        raise ConfigError(
            "an in-memory SQLite database would vanish with the process; give a file: "
            "sqlite:///path/to/agentdocket.db"
        )
    return parsed


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            name="postgresql",
            opener=_postgres,
            embedded=False,
            upgrades_on_open=False,
            rollups=True,
            partitions=True,
            placeholder="%s",
            concurrent_writers=True,
            check=_postgres_url,
            classify=_postgres_errors,
            live_query={"connect_timeout": "5"},
            at_head=_postgres_at_head,
            before_downgrade=_postgres_before_downgrade,
        ),
        Backend(
            name="sqlite",
            opener=_sqlite,
            embedded=True,
            upgrades_on_open=True,
            rollups=False,
            partitions=False,
            placeholder="?",
            concurrent_writers=False,
            check=_sqlite_url,
            classify=_sqlite_errors,
        ),
    )
}


def backend_named(name: str, url: str | None = None) -> Backend:
    """The backend of SQLAlchemy's backend name ``name`` (from ``url``, for the message)."""
    try:
        return BACKENDS[name]
    except KeyError:
        where = f" in {url!r}" if url is not None else ""
        raise ConfigError(
            f"unsupported database {name!r}{where}: use postgresql+psycopg://... or sqlite:///..."
        ) from None


def backend_of(url: str | URL) -> Backend:
    """The backend a database URL names."""
    parsed = parse_url(url) if isinstance(url, str) else url
    return backend_named(parsed.get_backend_name())


def parse_url(url: str) -> URL:
    """``url`` parsed, checked by its backend and normalised (PostgreSQL through psycopg 3)."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
        raise ConfigError(f"{url!r} is not a database URL ({exc})") from None
    return backend_named(parsed.get_backend_name(), url).check(parsed, url)
