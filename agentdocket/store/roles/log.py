"""The event log role: inserting events once each, reading a batch of traces back for the
scorers, the runs' months (``trace_months``), and the lock a rebuild of the projections takes.
The projections' rows are merged through the core recorder (:meth:`Recorder.merge`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from datetime import date
from typing import Any

from agentdocket.events import Event
from agentdocket.store.projections import Projection
from agentdocket.store.recorder import UNIQUE_KEYS, Recorder


class EventLog(ABC):
    """A database's event log, over its recorder ``db``."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    @abstractmethod
    def insert_events(
        self,
        conn: Any,
        events: Sequence[Event],
        months: dict[str, date],
        payloads: Sequence[bytes | None] | None = None,
        projected: Projection | None = None,
        redo: bool = False,
    ) -> tuple[int, Projection]:
        """Insert events under their traces' ``months``, skipping those already stored; return
        how many were inserted and the projection of those (a backend may compute it while the
        database digests the rows). ``payloads``: each event's payload as the JSON (UTF-8) to
        store, where the caller has it (None: the recorder encodes that one). ``projected``:
        the projection of all of ``events``, where the caller made it (it stands when every
        one of them is new). ``redo``: the caller runs its whole transaction again on
        :class:`~agentdocket.store.errors.CopyFailed`, so a backend may try a cheaper way
        first that it could not recover from within the transaction."""

    @abstractmethod
    def scoring_events(
        self, ids: Sequence[str], kinds: Collection[str] | None, months: Sequence[date]
    ) -> list[Event]:
        """The events of these traces (of these kinds; all kinds when None), in trace order;
        ``months``: the runs' months, where their events are."""

    @abstractmethod
    def lock_for_rebuild(self, conn: Any) -> None:
        """In ``conn``'s transaction: appends wait while the projections are rebuilt."""

    def unique_key(self, table: str) -> tuple[str, ...]:
        """The columns that recognise a row of ``events``, ``runs`` or ``verdicts``."""
        return UNIQUE_KEYS[table]

    def verdict_keys(self, scorer: str, version: str, ids: Sequence[str]) -> set[tuple[str, str]]:
        """(trace id, input hash) of the verdicts this scorer version already gave these runs."""
        if not ids:
            return set()
        where, params = self.db.any_of("trace_id", ids)
        rows = self.db.read(
            "SELECT trace_id, input_hash FROM verdicts WHERE scorer = ? AND scorer_version = ? "
            f"AND {where}",
            [scorer, version, *params],
        )
        return {(r[0], r[1]) for r in rows}

    def stored_months(self, conn: Any, trace_ids: Sequence[str]) -> dict[str, date]:
        """The month of each of these traces that has one (``trace_months``: one key probe
        each)."""
        months: dict[str, date] = {}
        for start in range(0, len(trace_ids), 1000):
            where, params = self.db.any_of("trace_id", list(trace_ids[start : start + 1000]))
            rows = self.db.read_on(
                conn, f"SELECT trace_id, run_month FROM trace_months WHERE {where}", params
            )
            months.update((t, self.db.from_db("run_month", m)) for t, m in rows)
        return months

    def keep_months(self, conn: Any, months: dict[str, date]) -> None:
        """Record the months of these traces, new here (``trace_months``, copied straight in);
        a trace another writer recorded meanwhile keeps its own."""
        if months:
            rows = [(t, self.db.to_db("run_month", m)) for t, m in sorted(months.items())]
            conflict = "ON CONFLICT (trace_id) DO NOTHING"
            columns = ("trace_id", "run_month")
            self.db.merge(conn, "trace_months", columns, ("trace_id",), rows, conflict, new=True)

    def lock_new_traces(self, conn: Any, trace_ids: Sequence[str]) -> bool:
        """Lock these traces, not yet stored, until the transaction ends; whether there are
        such locks (a database with one writer at a time needs none)."""
        return False
