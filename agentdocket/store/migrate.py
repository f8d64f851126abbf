"""Schema migrations through Alembic, for PostgreSQL and SQLite alike.

Which revision a database is at, and which is the newest, are read without Alembic (a tenth
of a second to import, on every command): the revisions are numbered files in
``migrations/versions``, each revising the one before (``tests/contract/test_migrations.py``
holds them to Alembic's own reading), and a database's revision is its ``alembic_version``
row."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from agentdocket.store.backends import backend_named, backend_of
from agentdocket.store.config import display_url, parse_url
from agentdocket.store.derived import Derived, drop_installed, install
from agentdocket.store.derived import installed_digest as derived_digest
from agentdocket.store.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

# The migrations' scripts, run by Alembic (the package agentdocket.migrations; the store
# imports none of it).
SCRIPT_LOCATION = str(Path(__file__).resolve().parents[1] / "migrations")
REVISION_FILE = re.compile(r"(\d{4})_\w+\.py")


def _config() -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    return cfg


def _engine(url: str) -> sa.Engine:
    parsed = parse_url(url)
    if backend_of(parsed).embedded:  # its folder is made, as the file is
        assert parsed.database
        try:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{display_url(url)}: cannot create its folder ({exc})") from None
    return sa.create_engine(parsed, poolclass=sa.pool.NullPool)


def head_revision() -> str:
    """The newest revision: the highest numbered file of ``migrations/versions``."""
    found = [
        m.group(1)
        for p in (Path(SCRIPT_LOCATION) / "versions").iterdir()
        if (m := REVISION_FILE.fullmatch(p.name))
    ]
    return max(found)


@contextmanager
def _mapped(url: str) -> Iterator[None]:
    """Driver errors, raw or wrapped by SQLAlchemy, as the store's (see
    :mod:`agentdocket.store.errors`), with what was being done when it said so."""
    try:
        yield
    except Exception as exc:
        orig = exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc
        mapped = None if orig is None else backend_of(url).classify(orig)
        if mapped is None:
            raise
        doing = "".join(f" ({note})" for note in getattr(exc, "__notes__", ()))
        raise type(mapped)(f"{display_url(url)}: {mapped}{doing}", code=mapped.code) from exc


def current_revision(url: str) -> str | None:
    """The database's revision (its ``alembic_version`` row), or None when it has none."""
    engine = _engine(url)
    try:
        with _mapped(url), engine.connect() as conn:
            return _revision_on(conn)
    finally:
        engine.dispose()


def _revision_on(conn: sa.Connection) -> str | None:
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall()
    return str(rows[0][0]) if rows else None


def _run(url: str, action: str, revision: str, derived: Sequence[Derived] = ()) -> None:
    """One transaction: drop the derived objects installed before, migrate, and install
    ``derived`` when the schema is at the head revision (they are written for it)."""
    from alembic import command

    engine = _engine(url)
    cfg = _config()
    try:
        with _mapped(url), engine.begin() as conn:
            backend = backend_named(conn.dialect.name)
            readers = drop_installed(conn, derived)
            cfg.attributes["connection"] = conn
            if action == "upgrade":
                command.upgrade(cfg, revision)
            else:
                if backend.before_downgrade is not None:
                    backend.before_downgrade(conn)
                command.downgrade(cfg, revision)
            if _revision_on(conn) == head_revision():
                install(conn, derived, readers)
                if backend.at_head is not None:  # partitions ahead, Citus's distribution
                    backend.at_head(conn)
    finally:
        engine.dispose()


def upgrade(url: str, revision: str = "head", derived: Sequence[Derived] = ()) -> None:
    """Migrate up to ``revision``; at the head, (re)install ``derived`` (see
    :mod:`agentdocket.store.derived`)."""
    _run(url, "upgrade", revision, derived)


def downgrade(url: str, revision: str = "base") -> None:
    _run(url, "downgrade", revision)


def installed_digest(url: str) -> str | None:
    """The digest of the derived objects installed at ``url`` (None if there are none)."""
    engine = _engine(url)
    try:
        with _mapped(url), engine.connect() as conn:
            return derived_digest(conn)
    finally:
        engine.dispose()
