"""Database helpers for the tests: throwaway PostgreSQL databases, the command line against a
store, and looking into every table."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agentdocket.store import Store, open_store
from agentdocket.store.config import parse_url, psycopg_conninfo

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def admin_url() -> str | None:
    return os.environ.get("AGENTDOCKET_TEST_PG_URL")


def admin(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def drop_database(url: str, name: str) -> None:
    with admin(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def fresh_pg(template: tuple[str, str], *, migrated: bool = True) -> tuple[str, str]:
    url, tpl = template
    name = f"agentdocket_test_{uuid.uuid4().hex[:10]}"
    with admin(url) as conn:
        if migrated:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(name), sql.Identifier(tpl)
                )
            )
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return parse_url(url).set(database=name).render_as_string(hide_password=False), name


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
            # its own transaction: Citus drops a function on every node over one connection a
            # node, which a transaction that dropped a trigger on every shard no longer is
            with engine.begin() as conn:
                conn.execute(sa.text("DROP FUNCTION test_refuse_marked()"))
    finally:
        engine.dispose()


def projections(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Every projection's rows, in a stable order (to compare two stores)."""
    return {
        "runs": store.reader.rows("runs", "trace_id"),
        "verdicts": store.reader.rows("verdicts", "verdict_id"),
        "steps": [
            dict(r) for r in store.recorder.dicts("SELECT * FROM steps ORDER BY trace_id, seq")
        ],
    }


def migrated_sqlite(path: Path) -> str:
    """A new SQLite database at ``path``, made as a user makes one (`agentdocket migrate`): the
    other commands open only a database that exists."""
    url = f"sqlite:///{path}"
    cli(url, "migrate")
    return url
