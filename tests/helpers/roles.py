"""The databases a role's contract test runs on: an abstract test case names a role's
behaviour, and a subclass per backend gives it a fresh, migrated database of that kind (as
pyeventsourcing tests its recorders)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

import pytest

from agentdocket.store import Store, open_store


class OnADatabase(ABC):
    """A contract test case's database: the store over it gives the recorder and roles."""

    @abstractmethod
    def url(self, request: pytest.FixtureRequest) -> str:
        """A fresh, migrated database of this backend."""

    @pytest.fixture
    def store(self, request: pytest.FixtureRequest) -> Iterator[Store]:
        store = open_store(self.url(request))
        yield store
        store.close()

    @pytest.fixture
    def other(self, store: Store) -> Iterator[Store]:
        """The same database on another connection (another process, as far as the database
        can tell)."""
        other = store.sibling()
        yield other
        other.close()


class OnSqlite(OnADatabase):
    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("sqlite_url"))


class OnPostgres(OnADatabase):
    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("pg_url"))


@pytest.mark.citus
class OnCitus(OnADatabase):
    """PostgreSQL's recorder on a Citus coordinator, the tables distributed by `migrate`."""

    def url(self, request: pytest.FixtureRequest) -> str:
        return str(request.getfixturevalue("citus_migrated_url"))
