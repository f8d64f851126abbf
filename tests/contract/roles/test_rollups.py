"""The rollups and readers roles' contracts, subclassed for the backends that play them
(PostgreSQL and Citus; SQLite has no rollups, its Roles say so: test_recorder.py)."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from agentdocket.store import Store, StoreError, StoreUnavailable
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.roles import Readers, Rollups
from tests.helpers.roles import OnADatabase, OnCitus, OnPostgres


def _rollups(store: Store) -> Rollups:
    assert store.roles.rollups is not None
    return store.roles.rollups


def _readers(store: Store) -> Readers:
    assert store.roles.readers is not None
    return store.roles.readers


def _ddl(store: Store, statement: str) -> None:
    with store.recorder.write() as conn:
        store.recorder.execute(conn, statement)


class RollupsContract(OnADatabase):
    def test_the_refresh_is_installed_with_the_dashboards_layer(self, store: Store) -> None:
        assert _rollups(store).installed()
        _ddl(store, "DROP FUNCTION agentdocket_refresh_rollups(timestamptz, timestamptz)")
        assert not _rollups(store).installed()
        assert store.projections.refresh_dashboards() is None

    def test_one_refresh_at_a_time(self, store: Store, other: Store) -> None:
        with _rollups(store).refreshing() as conn:
            assert conn is not None
            assert store.recorder.read_on(conn, "SELECT count(*) FROM rollup_stale")[0][0] >= 0
            with _rollups(other).refreshing() as busy:
                assert busy is None
        with _rollups(other).refreshing() as conn:
            assert conn is not None

    def test_a_run_locked_by_one_writer_waits_for_it(self, store: Store, other: Store) -> None:
        with store.recorder.write() as conn:
            _rollups(store).lock_runs(conn, ["t1", "t2"])
            with pytest.raises(StoreUnavailable), other.recorder.write() as theirs:
                other.recorder.execute(theirs, "SET LOCAL lock_timeout = '100ms'")
                _rollups(other).lock_runs(theirs, ["t2"])
            with other.recorder.write() as theirs:
                _rollups(other).lock_runs(theirs, ["t3"])  # another run: no wait


class ReadersContract(OnADatabase):
    # whether the reader of a view also needs the tables under it (a Citus coordinator)
    under_views: bool

    def test_a_reader_reads_what_it_was_granted_and_nothing_else(self, store: Store) -> None:
        readers = _readers(store)
        views = readers.views("dashboard_")
        assert views and all(v.startswith("dashboard_") for v in views)
        assert readers.views("no_such_prefix_") == []
        tables = readers.tables_under(views[:1])
        assert bool(tables) == self.under_views
        name = f"reader_{uuid.uuid4().hex[:8]}"
        readers.grant(name, "first", views[:1] + tables)
        try:
            readers.grant(name, "second", views[:1] + tables)  # again: a new password
            as_reader = parse_url(store.url).set(username=name, password="second")
            with psycopg.connect(psycopg_conninfo(as_reader), autocommit=True) as conn:
                conn.execute(f"SELECT count(*) FROM {views[0]}").fetchall()
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("SELECT count(*) FROM dead_letters")
        finally:
            assert readers.revoke(name)
        assert not readers.revoke(name)

    def test_a_role_with_more_rights_is_refused(self, store: Store) -> None:
        name = f"reader_{uuid.uuid4().hex[:8]}"
        _ddl(store, f"CREATE ROLE {name} LOGIN CREATEDB")
        try:
            with pytest.raises(StoreError, match="more than read rights"):
                _readers(store).grant(name, "x", _readers(store).views("dashboard_"))
        finally:
            _ddl(store, f"DROP ROLE {name}")


class TestPostgresRollups(RollupsContract, OnPostgres):
    pass


class TestCitusRollups(RollupsContract, OnCitus):
    pass


class TestPostgresReaders(ReadersContract, OnPostgres):
    under_views = False


class TestCitusReaders(ReadersContract, OnCitus):
    under_views = True
