"""The readers role: a login that may read given views and tables and nothing else, as the
dashboards' Grafana role is (which relations is the dashboards' choice:
:mod:`agentdocket.dashboards.grafana_role`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence


class Readers(ABC):
    """A database's read-only logins."""

    @abstractmethod
    def views(self, prefix: str) -> list[str]:
        """The views whose names start with ``prefix``, by name."""

    @abstractmethod
    def tables_under(self, views: Sequence[str]) -> list[str]:
        """Where the database runs a view's query as its reader rather than its owner (a Citus
        coordinator), the tables under ``views`` (through views reading views); else none."""

    @abstractmethod
    def grant(self, name: str, password: str, relations: Sequence[str]) -> None:
        """Create the login ``name`` (or set its password), allowed to SELECT ``relations``
        only, read-only; refused for an existing role with more than read rights."""

    @abstractmethod
    def revoke(self, name: str) -> bool:
        """Take every right of ``name`` here away and drop it; False when there is none."""
