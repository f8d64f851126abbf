"""The store's errors: one tree, whatever the database.

Every backend maps its driver's exceptions into this tree (see ``classify`` in
:mod:`agentdocket.store.backends.postgres.errors` and :mod:`agentdocket.store.backends.sqlite`);
no psycopg or sqlite3 exception leaves the store. What a caller does depends only on the branch:

- :class:`StoreUnavailable` (transient): the database could not be reached or could not finish
  now (connection refused or lost, a timeout, too many connections, a locked SQLite file).
  Back off, keep the data (the spool), try again. Its :class:`WriteConflict` (a deadlock or
  serialization failure between concurrent writers) is retried at once by the store itself.
- :class:`RecordRefused` (permanent): the database refuses this record's data (an encoding it
  cannot hold, a value out of range, a violated constraint). Sending it again fails again, so it
  is never retried blindly: :meth:`Store.append` isolates it and keeps it as a dead letter, and
  everything else in its batch is stored.
- any other :class:`StoreError`: the store cannot do what was asked (a schema at the wrong
  revision, an unknown dataset, a configuration error). It is not about one record; an operator
  has to act. Delivery treats it like an outage (spool and retry) so nothing is lost meanwhile.
"""

from __future__ import annotations

from agentdocket.errors import AgentdocketError


class StoreError(AgentdocketError, RuntimeError):
    """A store operation that cannot be done, with the reason. ``code`` is the database's own
    error code where there is one (a PostgreSQL SQLSTATE, or the sqlite3 exception's name)."""

    transient = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class StoreUnavailable(StoreError):
    """The database is away or could not finish now; the same call may succeed later."""

    transient = True


class WriteConflict(StoreUnavailable):
    """A concurrent writer got in the way (a deadlock, a serialization failure): the transaction
    left nothing behind, and the same write may be retried at once."""


class CopyFailed(WriteConflict):
    """A COPY straight into the log failed where the store does not go on in the transaction
    after it (a Citus worker's refusal or duplicate: rolling back to a savepoint did not
    always leave the transaction usable). The transaction left nothing behind; the write is
    run again at once, its rows through the staging table."""


class MaintenanceBusy(StoreUnavailable):
    """Making or dropping partitions found the log's tables busy for its whole budget (see
    :mod:`agentdocket.store.backends.postgres.locks`); nothing was changed. Try again later."""


class RecordRefused(StoreError):
    """The database refuses a record's data; sending it again will fail again.

    ``event_id`` names the refused event when the store knows it (always, after isolation);
    ``column`` the column the database named, if it did; ``code`` the database's own error code
    (a PostgreSQL SQLSTATE, or the sqlite3 exception's name).
    """

    def __init__(
        self,
        message: str,
        *,
        event_id: str | None = None,
        column: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.reason = message
        self.event_id = event_id
        self.column = column

    def __str__(self) -> str:
        where = f"event {self.event_id}" if self.event_id else ""
        if self.column:
            where += f"{', ' if where else ''}column {self.column}"
        return f"{where}: {self.reason}" if where else self.reason

    def about(self, event_id: str) -> RecordRefused:
        """The same refusal, naming the event it was found on."""
        return RecordRefused(self.reason, event_id=event_id, column=self.column, code=self.code)


class DatasetConflict(StoreError):
    """A dataset version that already exists with different content."""


class ConfigError(AgentdocketError, ValueError):
    """A database URL agentdocket cannot use."""
