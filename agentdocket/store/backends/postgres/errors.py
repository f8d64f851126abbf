"""psycopg's errors as the store's (:mod:`agentdocket.store.errors`), by SQLSTATE."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from agentdocket.store.errors import RecordRefused, StoreError, StoreUnavailable, WriteConflict

# SQLSTATEs that mean "not now": retry later. Whole classes: 08 connection exception, 53
# insufficient resources (too many connections, disk full), 57 operator intervention (shutdown,
# statement timeout), 58 system error; and serialization failure, deadlock, lock not available.
TRANSIENT_CLASSES = frozenset({"08", "53", "57", "58"})
TRANSIENT_STATES = frozenset({"40001", "40P01", "55P03", "55006"})
# SQLSTATEs that mean "not this data": 22 data exception (bad encoding, out of range), 23
# integrity constraint violation, 54 program limit exceeded (a value too big to index), P0001
# an exception raised by a trigger.
REFUSED_CLASSES = frozenset({"22", "23", "54"})
REFUSED_STATES = frozenset({"P0001"})
DEADLOCKS = frozenset({"40001", "40P01"})


def classify(exc: psycopg.Error) -> StoreError:
    """A psycopg error as the store's error (see :mod:`agentdocket.store.errors`)."""
    state = exc.sqlstate or ""
    diag = exc.diag
    text = str(exc).strip()
    message = diag.message_primary or (text.splitlines()[0] if text else type(exc).__name__)
    if diag.message_detail:
        message += f" ({diag.message_detail})"
    if state in DEADLOCKS:
        return WriteConflict(message, code=state)
    if state[:2] in TRANSIENT_CLASSES or state in TRANSIENT_STATES:
        return StoreUnavailable(message, code=state)
    if not state and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(message)  # connection refused, lost or closed: no SQLSTATE
    if state[:2] in REFUSED_CLASSES or state in REFUSED_STATES:
        return RecordRefused(message, column=diag.column_name, code=state)
    return StoreError(message, code=state or None)


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Raise psycopg's errors as the store's."""
    try:
        yield
    except psycopg.Error as exc:
        raise classify(exc) from exc
