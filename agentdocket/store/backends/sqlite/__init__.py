"""SQLite, the embedded default: its recorder (:mod:`.recorder`) and the roles it plays
(:mod:`.roles`): the event log, arrival order and months; no rollups."""

from __future__ import annotations

from sqlalchemy.engine import URL

from agentdocket.store.backends.sqlite.recorder import SqliteRecorder, classify
from agentdocket.store.backends.sqlite.roles import SqliteArrivalOrder, SqliteEventLog, SqliteMonths
from agentdocket.store.roles import Roles


def open_sqlite(url: URL) -> Roles:
    """The SQLite database at ``url`` (checked by its backend), open."""
    db = SqliteRecorder(url)
    return Roles(db, SqliteEventLog(db), SqliteArrivalOrder(), SqliteMonths(db))


__all__ = ["SqliteRecorder", "classify", "open_sqlite"]
