"""Fixtures: every store test runs against real SQLite and real PostgreSQL.

PostgreSQL comes from ``AGENTDOCKET_TEST_PG_URL`` (set by scripts/test, which starts the
cluster). Each test gets a fresh database cloned from a migrated template.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from psycopg import sql

from agentdocket import dashboards
from agentdocket.store import Store, open_store
from agentdocket.store.config import parse_url
from agentdocket.store.migrate import upgrade
from tests.helpers.citus import CITUS_ENV, Cluster
from tests.helpers.db import admin, admin_url, drop_database, fresh_pg
from tests.helpers.fresh import SERVERS, fresh_url


@pytest.fixture(scope="session")
def pg_template() -> Iterator[tuple[str, str]]:
    url = admin_url()
    if not url:
        if os.environ.get("CI"):
            pytest.fail("AGENTDOCKET_TEST_PG_URL is not set: run the suite with scripts/test")
        pytest.skip("no PostgreSQL: run the suite with scripts/test")
    name = f"agentdocket_tpl_{uuid.uuid4().hex[:8]}"
    with admin(url) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    template = parse_url(url).set(database=name).render_as_string(hide_password=False)
    upgrade(template, derived=dashboards.objects())
    yield url, name
    drop_database(url, name)


@pytest.fixture(scope="session")
def citus_cluster() -> Cluster:
    """The local Citus cluster scripts/citus-up started (``AGENTDOCKET_TEST_CITUS_URL``)."""
    url = os.environ.get(CITUS_ENV)
    if not url:
        pytest.skip(
            "no Citus cluster: scripts/citus-up builds one from ../shared/vendor/citus, which "
            "is not beside this checkout (scripts/test runs it when it is)"
        )
    return Cluster.of(url)


@pytest.fixture
def citus_url(citus_cluster: Cluster) -> Iterator[str]:
    """A fresh, empty database of the Citus cluster (on the coordinator and every worker)."""
    name = f"agentdocket_citus_{uuid.uuid4().hex[:8]}"
    url = citus_cluster.make_database(name)
    yield url
    citus_cluster.drop_database(name)


@pytest.fixture
def citus_migrated_url(citus_url: str) -> str:
    """A fresh database of the Citus cluster, migrated (and so distributed) as `agentdocket
    migrate` does."""
    upgrade(citus_url, derived=dashboards.objects())
    return citus_url


@pytest.fixture
def pg_url(pg_template: tuple[str, str]) -> Iterator[str]:
    url, name = fresh_pg(pg_template)
    yield url
    drop_database(pg_template[0], name)


@pytest.fixture
def empty_pg_url(pg_template: tuple[str, str]) -> Iterator[str]:
    """A PostgreSQL database with no schema at all."""
    url, name = fresh_pg(pg_template, migrated=False)
    yield url
    drop_database(pg_template[0], name)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One SQLite file migrated to the head revision, with the dashboards' derived objects as
    the command line installs them: each test's database is a copy."""
    path = tmp_path_factory.mktemp("template") / "agentdocket.db"
    upgrade(f"sqlite:///{path}", derived=dashboards.objects())
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """A fresh, migrated SQLite database (the command line opens only one that exists)."""
    path = tmp_path / "agentdocket.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def bare_sqlite_url(tmp_path: Path) -> str:
    """An SQLite file path with nothing there yet."""
    return f"sqlite:///{tmp_path / 'bare.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database of each kind. A module whose tests hold on a Citus cluster
    too overrides it with ``params=EVERY`` (and ``fresh_url``)."""
    return fresh_url(request)


@pytest.fixture(params=SERVERS)
def server_url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database of each server kind: a PostgreSQL database, and a database
    of the local Citus cluster (a coordinator and two workers)."""
    return fresh_url(request)


@pytest.fixture(params=["sqlite", "postgresql"])
def bare_url(request: pytest.FixtureRequest) -> str:
    """A fresh database of each kind with no schema."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("bare_sqlite_url"))
    return str(request.getfixturevalue("empty_pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    s = open_store(url)
    yield s
    s.close()
