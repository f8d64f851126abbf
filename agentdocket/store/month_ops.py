"""Retention's months, as each backend keeps them: which months hold runs, what a month holds,
and dropping one (:mod:`agentdocket.store.retention` decides which; the backends know how:
``PostgresMonthOps`` in :mod:`agentdocket.store.backends.postgres.months`, ``SqliteMonthOps`` in
:mod:`agentdocket.store.backends.sqlite`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class Month:
    """A month past the window: the rows it holds, by table, and its runs newer than the
    window (a month with any is kept)."""

    month: date
    rows: dict[str, int]
    newer_runs: int = 0
    datasets: dict[str, int] = field(default_factory=dict)  # its runs by dataset ("(none)")
    kept_runs: int = 0  # its runs of datasets kept out of retention (a month with any stays)

    @property
    def label(self) -> str:
        return self.month.strftime("%Y-%m")

    @property
    def stays(self) -> bool:
        return bool(self.newer_runs or self.kept_runs)

    def as_dict(self) -> dict[str, Any]:
        return {
            "month": self.label,
            **self.rows,
            "newer_runs": self.newer_runs,
            "datasets": self.datasets,
            "kept_runs": self.kept_runs,
        }


class MonthOps:
    """One database's months: which hold runs, what each holds, and dropping one (each
    recorder gives its own: :meth:`agentdocket.store.recorder.Recorder.month_ops`)."""

    def __init__(self, db: Any) -> None:  # the recorder whose months these are
        self.db = db

    def stored(self, conn: Any) -> list[date]:
        raise NotImplementedError  # pragma: no cover

    def partitions(self, month: date) -> tuple[str, ...]:
        """The tables holding ``month`` alone, locked with the parents while it is dropped."""
        return ()

    def count(self, conn: Any, month: date, window_start: datetime) -> Month:
        raise NotImplementedError  # pragma: no cover

    def newest(self, conn: Any, month: date) -> Any:
        """The month's last arrival (an event stored since changes it)."""
        raise NotImplementedError  # pragma: no cover

    def drop(self, conn: Any, month: date) -> None:
        raise NotImplementedError  # pragma: no cover

    def prune(self, conn: Any) -> int:
        """Drop what the backend keeps for a while only, whatever the window; how many rows."""
        return 0

    def datasets(self, conn: Any, month: date) -> dict[str, int]:
        """The month's runs by dataset (``(none)`` for runs of none)."""
        rows = self.db.read_on(
            conn,
            "SELECT coalesce(dataset, '(none)'), count(*) FROM runs WHERE run_month = ? "
            "GROUP BY 1 ORDER BY 1",
            [self.db.to_db("run_month", month)],
        )
        return {str(name): int(n) for name, n in rows}

    def _one(self, conn: Any, sql: str, *params: Any) -> int:
        [(n,)] = self.db.read_on(conn, sql, list(params))
        return int(n or 0)
