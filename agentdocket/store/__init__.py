"""agentdocket's storage: the append-only event log, its projections, datasets and cases.

Only this package talks to agentdocket's own database.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from agentdocket.store.appending import AppendResult
from agentdocket.store.backends import Backend, backend_of
from agentdocket.store.base import Store
from agentdocket.store.config import ENV_VAR, ConfigError, database_url, display_url
from agentdocket.store.dead_letters import DeadLetter, Retried
from agentdocket.store.derived import Derived, digest, for_dialect
from agentdocket.store.errors import DatasetConflict, RecordRefused, StoreError, StoreUnavailable
from agentdocket.store.limits import STORE as STORE_LIMITS
from agentdocket.store.limits import Limits
from agentdocket.store.redaction import RedactionConfigError, Redactor
from agentdocket.store.rows import (
    CaseRun,
    DatasetVersion,
    DeadLetterRow,
    Run,
    Session,
    VerdictRow,
)

__all__ = [
    "ENV_VAR",
    "AppendResult",
    "Backend",
    "CaseRun",
    "ConfigError",
    "DatasetConflict",
    "DatasetVersion",
    "DeadLetter",
    "DeadLetterRow",
    "Derived",
    "Limits",
    "Opener",
    "RecordRefused",
    "RedactionConfigError",
    "Redactor",
    "Retried",
    "Run",
    "Session",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "VerdictRow",
    "backend_of",
    "database_url",
    "display_url",
    "open_store",
]


def open_store(
    url: str | None = None,
    *,
    migrate: bool = True,
    redactor: Redactor | None = None,
    limits: Limits = STORE_LIMITS,
    derived: Sequence[Derived] = (),
) -> Store:
    """Open the store at ``url`` (default: ``AGENTDOCKET_DATABASE_URL`` or ./agentdocket.db).

    With ``migrate`` (the default) an SQLite file, or a PostgreSQL database that has no
    agentdocket schema yet, is brought to the current schema. A PostgreSQL database at an older
    revision is left alone: upgrading a shared server is an explicit ``agentdocket migrate``.
    ``redactor`` (default: the rules ``AGENTDOCKET_REDACT`` chooses) is applied to every event
    and case before it is written, after ``limits`` (:mod:`agentdocket.store.limits`).
    ``derived`` are the views and functions a migration here
    installs (:mod:`agentdocket.store.derived`; the command line gives the dashboards' layer);
    on SQLite they are re-installed whenever they differ from what is there, and
    :attr:`Store.derived_current` says whether the database has them as given.
    """
    from agentdocket.store import migrate as migrations

    url = database_url(url)
    backend = backend_of(url)
    current = migrations.current_revision(url)
    head = migrations.head_revision()
    if current != head:
        if migrate and (backend.upgrades_on_open or current is None):
            migrations.upgrade(url, derived=derived)
            current = head
        elif current is None:
            raise StoreError(
                f"{display_url(url)} has no agentdocket schema: run `agentdocket migrate`"
            )
        else:
            raise StoreError(
                f"{display_url(url)} is at schema revision {current}, this agentdocket needs "
                f"{head}: run `agentdocket migrate`"
            )
    store = Store(backend.open(url), redactor, limits)
    if derived:  # compared on the store's own connection: no second one per open
        wanted = digest(for_dialect(derived, backend.name))
        installed = store.derived_digest()
        if installed != wanted and migrate and backend.upgrades_on_open:
            migrations.upgrade(url, derived=derived)
            installed = wanted
        store.derived_current = installed == wanted
    return store


class Opener:
    """Stores over one database for the services of one process (``serve``: the sink's
    writers, the annotation page, the sampler, the refresher, the follower), each on a
    connection of its own. The first store opened checks the schema as :func:`open_store`
    does; after that each is that store's :meth:`~Store.sibling`, not checked again. While
    the database is away, a call raises :class:`StoreUnavailable` and the next one tries again;
    the services hold an opener, never a URL of their own.

    ``limits`` (given per call) are the limits of that store's writes (the sink's are live
    ingestion's); ``redactor`` is the same for every store of the process."""

    def __init__(
        self,
        url: str | None = None,
        *,
        migrate: bool = True,
        redactor: Redactor | None = None,
        limits: Limits = STORE_LIMITS,
    ) -> None:
        self.url = database_url(url)
        self.migrate = migrate
        self.redactor = redactor if redactor is not None else Redactor.from_env()
        self.limits = limits
        # the store that checked the schema, handed to its first caller; the others are its
        # siblings (which need none of its connection: closing it changes nothing here)
        self._first: Store | None = None
        self._lock = threading.Lock()

    def __call__(self, limits: Limits | None = None) -> Store:
        wanted = self.limits if limits is None else limits
        with self._lock:
            if self._first is None:
                self._first = open_store(
                    self.url, migrate=self.migrate, redactor=self.redactor, limits=wanted
                )
                return self._first
            first = self._first
        return first.sibling(wanted)

    def close(self) -> None:
        """Close the store that checked the schema, if its caller has not (each service
        closes its own; closing twice is harmless)."""
        with self._lock:
            first, self._first = self._first, None
        if first is not None:
            first.close()
