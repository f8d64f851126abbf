"""Fixtures: every store test runs against real SQLite and real PostgreSQL.

PostgreSQL comes from ``AGENTDOCKET_TEST_PG_URL`` (set by scripts/test, which starts the
cluster). Each test gets a fresh database cloned from a migrated template.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agentdocket.store import Store, open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _admin_url() -> str | None:
    return os.environ.get("AGENTDOCKET_TEST_PG_URL")


def _admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def _drop(url: str, name: str) -> None:
    with _admin(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def pg_template() -> Iterator[tuple[str, str]]:
    url = _admin_url()
    if not url:
        if os.environ.get("CI"):
            pytest.fail("AGENTDOCKET_TEST_PG_URL is not set: run the suite with scripts/test")
        pytest.skip("no PostgreSQL: run the suite with scripts/test")
    name = f"agentdocket_tpl_{uuid.uuid4().hex[:8]}"
    with _admin(url) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    upgrade(parse_url(url).set(database=name).render_as_string(hide_password=False))
    yield url, name
    _drop(url, name)


def _fresh_pg(template: tuple[str, str], *, migrated: bool = True) -> tuple[str, str]:
    url, tpl = template
    name = f"agentdocket_test_{uuid.uuid4().hex[:10]}"
    with _admin(url) as conn:
        if migrated:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(tpl)
                )
            )
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return parse_url(url).set(database=name).render_as_string(hide_password=False), name


@pytest.fixture
def pg_url(pg_template: tuple[str, str]) -> Iterator[str]:
    url, name = _fresh_pg(pg_template)
    yield url
    _drop(pg_template[0], name)


@pytest.fixture
def empty_pg_url(pg_template: tuple[str, str]) -> Iterator[str]:
    """A PostgreSQL database with no schema at all."""
    url, name = _fresh_pg(pg_template, migrated=False)
    yield url
    _drop(pg_template[0], name)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agentdocket.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database of each kind."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", "postgresql"])
def bare_url(request: pytest.FixtureRequest) -> str:
    """A fresh database of each kind with no schema."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("empty_pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    s = open_store(url)
    yield s
    s.close()


def require_shared(path: Path) -> None:
    """Skip when ``path`` under ../shared is absent (a user's fresh clone); fail in CI, where
    ../shared is always beside the checkout."""
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing: CI must have ../shared beside the checkout")
        pytest.skip(f"{path} is absent (the shared data is not beside this checkout)")


def cli(url: str, *args: str) -> str:
    """Run the command line against ``url``; it must succeed. Its output."""
    from click.testing import CliRunner

    from agentdocket.cli import main

    result = CliRunner().invoke(main, ["--database", url, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def database_text(url: str) -> str:
    """Every row of every table of the database at ``url``, as one text."""
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            parts = []
            for table in sa.inspect(conn).get_table_names():
                rows = conn.execute(sa.text(f'SELECT * FROM "{table}"')).all()
                parts.append(f"{table}: {rows!r}")
            return "\n".join(parts)
    finally:
        engine.dispose()


def assert_absent(url: str, *secrets: str) -> None:
    """None of ``secrets`` is anywhere in the database (and the database holds events)."""
    text = database_text(url)
    assert "events: []" not in text, "nothing was stored"
    for secret in secrets:
        assert secret not in text, f"{secret!r} reached the database"


def rounded(row: Iterable[Any]) -> tuple[Any, ...]:
    """A result row with its floats rounded to 9 places: sums of the same numbers taken in
    another order (rollups and live aggregates) differ in the last bits."""
    return tuple(round(v, 9) if isinstance(v, float) else v for v in row)


def refuse_events_containing(url: str, marker: str) -> None:
    """Make the database at ``url`` refuse (permanently, as a constraint would) every event
    whose payload contains ``marker``: a trigger raising an error, on either backend."""
    import sqlalchemy as sa

    open_store(url).close()  # migrated first

    engine = sa.create_engine(parse_url(url))
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":
                conn.execute(
                    sa.text(
                        "CREATE FUNCTION test_refuse_marked() RETURNS trigger LANGUAGE plpgsql AS "
                        f"$$ BEGIN IF NEW.payload::text LIKE '%{marker}%' THEN "
                        f"RAISE EXCEPTION 'test: events holding {marker} are refused'; END IF; "
                        "RETURN NEW; END $$"
                    )
                )
                conn.execute(
                    sa.text(
                        "CREATE TRIGGER test_refuse_marked BEFORE INSERT ON events "
                        "FOR EACH ROW EXECUTE FUNCTION test_refuse_marked()"
                    )
                )
            else:
                conn.execute(
                    sa.text(
                        "CREATE TRIGGER test_refuse_marked BEFORE INSERT ON events "
                        f"WHEN NEW.payload LIKE '%{marker}%' BEGIN SELECT RAISE(ABORT, "
                        f"'test: events holding {marker} are refused'); END"
                    )
                )
    finally:
        engine.dispose()


def accept_events_again(url: str) -> None:
    """Undo :func:`refuse_events_containing`: the cause of the refusals is fixed."""
    import sqlalchemy as sa

    engine = sa.create_engine(parse_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(
                sa.text(
                    "DROP TRIGGER test_refuse_marked ON events"
                    if engine.dialect.name == "postgresql"
                    else "DROP TRIGGER test_refuse_marked"
                )
            )
            if engine.dialect.name == "postgresql":
                conn.execute(sa.text("DROP FUNCTION test_refuse_marked()"))
    finally:
        engine.dispose()
