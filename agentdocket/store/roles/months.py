"""The months role: whole months of the log, as retention sees them (which months hold runs,
what a month holds, dropping one) and the partitions rows of a month go to.
:mod:`agentdocket.store.retention` decides which months go; a backend knows how."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, TypeVar

from agentdocket.store.recorder import Recorder

T = TypeVar("T")


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


class Months(ABC):
    """A database's months, over its recorder ``db``."""

    def __init__(self, db: Recorder) -> None:
        self.db = db

    @abstractmethod
    def stored(self, conn: Any) -> list[date]:
        """The months that hold events, oldest first."""

    @abstractmethod
    def count(self, conn: Any, month: date, window_start: datetime) -> Month:
        """What ``month`` holds, and how many of its runs are newer than ``window_start``."""

    @abstractmethod
    def newest(self, conn: Any, month: date) -> Any:
        """The month's last arrival (an event stored since changes it)."""

    @abstractmethod
    def drop(self, conn: Any, month: date) -> None:
        """Take the month's events, runs, verdicts and judge calls away."""

    def partitions(self, month: date) -> tuple[str, ...]:
        """The tables holding ``month`` alone, locked with the parents while it is dropped."""
        return ()

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

    def ensure_partitions(self, months: set[date]) -> int:
        """Make sure rows of these months have somewhere to go; how many partitions were made
        (none where the database has no partitions). Outside any transaction."""
        return 0

    def partition_ddl(self, work: Callable[[Any], T], *partitions: str) -> T:
        """``work(conn)`` in a write transaction of its own, holding what making or dropping
        partitions needs (on PostgreSQL one lock order for all of it, ``partitions`` locked
        too; tried again while the tables are busy)."""
        with self.db.write() as conn:
            return work(conn)

    def _one(self, conn: Any, sql: str, *params: Any) -> int:
        [(n,)] = self.db.read_on(conn, sql, list(params))
        return int(n or 0)
