"""The database primitives every part of the store is written against; the backends
(:mod:`agentdocket.store.postgres`, :mod:`agentdocket.store.sqlite`) implement them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from agentdocket.store.redaction import Redactor


class Primitives(ABC):
    """Connections, value conversion and the bulk insert, per database."""

    redactor: Redactor

    @abstractmethod
    def _write(self) -> Any:
        """A context manager: a write transaction on a connection (retrying is the caller's)."""

    @abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a read-only query written with ``?`` placeholders."""

    @abstractmethod
    def _execute(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> None: ...

    @abstractmethod
    def _merge(
        self,
        conn: Any,
        table: str,
        columns: Sequence[str],
        key: Sequence[str],
        rows: list[tuple[Any, ...]],
        conflict: str,
    ) -> None:
        """Insert rows into a projection table; rows whose key exists go through ``conflict``
        (an ``ON CONFLICT ... DO ...`` clause; empty for tables where a clash is an error)."""

    @abstractmethod
    def _to_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def _from_db(self, column: str, value: Any) -> Any: ...

    @abstractmethod
    def _dicts(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]: ...

    @abstractmethod
    def _read_on(
        self, conn: Any, sql: str, params: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]: ...
