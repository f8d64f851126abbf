"""Arrivals: what arrived in the log after a position, which runs it touched, and the cursors
and claims that let several followers share the work.

A :class:`Position` orders events as they were stored. On PostgreSQL it is (transaction id,
sequence number), and :meth:`Arrivals.after` returns only events whose transaction is older
than every transaction still running, so nothing can later be committed before a position a
follower has passed. On SQLite, with one writer at a time, the sequence number alone is the
commit order (``tx`` is 0).

Claims keep two followers from judging the same run at the same time: on PostgreSQL a session
advisory lock per (follower, run), released when the run is done or the follower's connection
ends (a killed follower holds nothing). On SQLite every claim succeeds: one process writes at
a time, and a verdict given twice is stored once anyway (its event id is derived).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agentdocket.store.recorder import Recorder
from agentdocket.store.roles import ArrivalOrder


@dataclass(frozen=True, order=True)
class Position:
    """A place in the log's arrival order; events after it are those not yet followed."""

    tx: int = 0
    seq: int = 0

    def before(self) -> Position:
        """The position just before this one (no stored event lies between them)."""
        return Position(self.tx, self.seq - 1)

    def __str__(self) -> str:
        return f"{self.tx}:{self.seq}" if self.tx else str(self.seq)


@dataclass(frozen=True)
class Arrival:
    """An event's arrival, without its content: enough to know which run it touched."""

    position: Position
    trace_id: str
    kind: str
    received_at: datetime | None


@dataclass(frozen=True)
class FinishedRun:
    """What selection rules read of a finished run (from the runs projection)."""

    trace_id: str
    agent: str | None
    agent_version: str | None
    dataset: str | None
    status: str | None
    attributes: dict[str, Any]


class Arrivals:
    """Arrivals, finished runs, follower cursors and claims, on a recorder."""

    def __init__(self, db: Recorder, order: ArrivalOrder) -> None:
        self.db = db
        self.order = order

    def _after(
        self, position: Position, skip_kinds: Collection[str], only_kinds: Sequence[str] = ()
    ) -> tuple[str, list[Any]]:
        where, params = self.order.arrived_after(position.tx, position.seq)
        if skip_kinds:
            where += f" AND kind NOT IN ({', '.join('?' * len(skip_kinds))})"
            params += sorted(skip_kinds)
        if only_kinds:
            where += f" AND kind IN ({', '.join('?' * len(only_kinds))})"
            params += list(only_kinds)
        return where, params

    def after(
        self, position: Position, limit: int, *, skip_kinds: Collection[str] = ()
    ) -> list[Arrival]:
        """Up to ``limit`` events stored after ``position``, in arrival order, none of which
        can be followed by an event committed earlier. Kinds in ``skip_kinds`` are left out
        (their positions are passed over all the same)."""
        where, params = self._after(position, skip_kinds)
        tx, order = self.order.arrival_order()
        rows = self.db.read(
            f"SELECT {tx}, position, trace_id, kind, received_at FROM events "
            f"WHERE {where} ORDER BY {', '.join(order)} LIMIT ?",
            [*params, limit],
        )
        return [
            Arrival(
                Position(int(r[0]), int(r[1])), r[2], r[3], self.db.from_db("received_at", r[4])
            )
            for r in rows
        ]

    def events_after(
        self, position: Position, limit: int, kinds: Sequence[str]
    ) -> list[tuple[Position, str]]:
        """Up to ``limit`` events of ``kinds`` stored after ``position``, in arrival order, as
        (position, event id): what an outbound cursor reads (the verdicts to send)."""
        where, params = self._after(position, (), kinds)
        tx, order = self.order.arrival_order()
        rows = self.db.read(
            f"SELECT {tx}, position, event_id FROM events "
            f"WHERE {where} ORDER BY {', '.join(order)} LIMIT ?",
            [*params, limit],
        )
        return [(Position(int(r[0]), int(r[1])), str(r[2])) for r in rows]

    def count_after(
        self,
        position: Position,
        *,
        skip_kinds: Collection[str] = (),
        only_kinds: Sequence[str] = (),
    ) -> int:
        """How many events (not of ``skip_kinds``; only of ``only_kinds`` if given) can be
        followed after ``position`` now."""
        where, params = self._after(position, skip_kinds, only_kinds)
        return int(self.db.read(f"SELECT count(*) FROM events WHERE {where}", params)[0][0])

    def head(self) -> Position:
        """The position of the last event that :meth:`after` could return now."""
        tx, order = self.order.arrival_order()
        rows = self.db.read(
            f"SELECT {tx}, position FROM events WHERE {self.order.readable()} "
            f"ORDER BY {', '.join(c + ' DESC' for c in order)} LIMIT 1"
        )
        return Position(int(rows[0][0]), int(rows[0][1])) if rows else Position()

    def finished(
        self, trace_ids: Sequence[str], upto: Position | None = None
    ) -> dict[str, FinishedRun]:
        """The finished runs among ``trace_ids``: their end is stored, at or before ``upto``
        when given (what a follower has read: an end committed since is read next round)."""
        if not trace_ids:
            return {}
        where, params = self.db.any_of("trace_id", list(trace_ids))
        if upto is not None:
            arrived, more = self.order.arrived_by(upto.tx, upto.seq, "f")
            where += (
                " AND EXISTS (SELECT 1 FROM events f WHERE f.trace_id = runs.trace_id "
                f"AND f.kind = 'run.finished' AND {arrived})"
            )
            params += more
        rows = self.db.read(
            "SELECT trace_id, agent, agent_version, dataset, status, attributes FROM runs "
            f"WHERE {where} AND started_at IS NOT NULL AND ended_at IS NOT NULL",
            params,
        )
        return {
            r[0]: FinishedRun(
                r[0], r[1], r[2], r[3], r[4], self.db.from_db("attributes", r[5]) or {}
            )
            for r in rows
        }

    # --- cursors ----------------------------------------------------------------------------

    def cursor(self, follower: str) -> Position:
        """Where ``follower`` resumes (the start of the log if it never saved a cursor)."""
        rows = self.db.read(
            "SELECT tx, position FROM scoring_cursors WHERE follower = ?", [follower]
        )
        return Position(int(rows[0][0]), int(rows[0][1])) if rows else Position()

    def save_cursor(self, follower: str, position: Position) -> None:
        """Move ``follower``'s cursor to ``position``; never backwards (another follower of the
        same name may have saved a later one)."""
        now = datetime.now(UTC)
        with self.db.write() as conn:
            self.db.execute(
                conn,
                "INSERT INTO scoring_cursors (follower, tx, position, updated_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (follower) DO UPDATE SET "
                "tx = excluded.tx, position = excluded.position, "
                "updated_at = excluded.updated_at "
                "WHERE (scoring_cursors.tx, scoring_cursors.position) "
                "< (excluded.tx, excluded.position)",
                [follower, position.tx, position.seq, self.db.to_db("updated_at", now)],
            )

    def cursors(self) -> list[tuple[str, Position, datetime | None]]:
        """Every follower's cursor: (follower, position, when it last moved)."""
        return [
            (r[0], Position(int(r[1]), int(r[2])), self.db.from_db("updated_at", r[3]))
            for r in self.db.read(
                "SELECT follower, tx, position, updated_at FROM scoring_cursors ORDER BY follower"
            )
        ]

    def saved_at(self, follower: str) -> datetime | None:
        """When ``follower`` last moved its cursor (None: never)."""
        rows = self.db.read("SELECT updated_at FROM scoring_cursors WHERE follower = ?", [follower])
        return self.db.from_db("updated_at", rows[0][0]) if rows else None

    def datasets_since(self, since: datetime) -> list[tuple[str, str, datetime]]:
        """Dataset versions registered at or after ``since``: (name, version, registered)."""
        rows = self.db.read(
            "SELECT name, version, created_at FROM datasets WHERE created_at >= ? "
            "ORDER BY created_at",
            [self.db.to_db("created_at", since)],
        )
        return [(r[0], r[1], self.db.from_db("created_at", r[2]) or since) for r in rows]

    # --- claims -----------------------------------------------------------------------------

    def claim(self, follower: str, trace_ids: Sequence[str]) -> list[str]:
        """The runs of ``trace_ids`` this follower now holds (PostgreSQL: those no other
        follower of the same name holds). Release them with :meth:`release`."""
        return self.order.claim_runs(follower, trace_ids) if trace_ids else []

    def release(self, follower: str, trace_ids: Sequence[str]) -> None:
        if trace_ids:
            self.order.release_runs(follower, trace_ids)
