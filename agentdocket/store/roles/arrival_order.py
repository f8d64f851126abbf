"""The arrival order role: the order events were committed in, as a follower reads it, and
claims on runs so that two followers never judge one run at once
(:mod:`agentdocket.store.arrivals` reads through it)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any


class ArrivalOrder(ABC):
    """A database's arrival order and run claims."""

    @abstractmethod
    def arrival_order(self) -> tuple[str, tuple[str, ...]]:
        """SQL of an event's transaction (an integer; ``0`` where the position alone is the
        commit order), and the columns that order ``events`` by arrival."""

    @abstractmethod
    def arrived_after(self, tx: int, seq: int) -> tuple[str, list[Any]]:
        """A condition on ``events``: stored after (``tx``, ``seq``), and readable now (no event
        committed later can come before it)."""

    @abstractmethod
    def arrived_by(self, tx: int, seq: int, alias: str) -> tuple[str, list[Any]]:
        """A condition on ``events`` aliased ``alias``: stored at or before (``tx``, ``seq``)."""

    @abstractmethod
    def readable(self) -> str:
        """A condition on ``events``: readable now (no event committed later can come before
        it)."""

    @abstractmethod
    def claim_runs(self, key: str, trace_ids: Sequence[str]) -> list[str]:
        """The runs of ``trace_ids`` this session now holds for ``key`` (none that another
        session holds for it); where one process writes at a time, all of them."""

    @abstractmethod
    def release_runs(self, key: str, trace_ids: Sequence[str]) -> None:
        """Let go of runs :meth:`claim_runs` gave."""
