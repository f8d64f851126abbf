"""A read-only login for Grafana: it can read the ``dashboard_*`` views and nothing else (a
view reads its tables with its owner's rights, so the role needs no grant on them), except
where the database runs a view's query as its reader (a Citus coordinator): there it is also
granted the tables under the views (:meth:`~agentdocket.store.roles.Readers.tables_under`).
Which relations is decided here; how a login is made, granted and dropped is the database's
(the readers role)."""

from __future__ import annotations

from dataclasses import dataclass

from agentdocket.store.errors import StoreError
from agentdocket.store.roles import Readers

PREFIX = "dashboard_"


@dataclass(frozen=True)
class Granted:
    """What the role may read: the views, and on Citus the tables under them."""

    views: list[str]
    tables: list[str]


def grant_dashboard_role(readers: Readers, name: str, password: str) -> Granted:
    """Create the login role ``name`` (or reset its password), allowed to SELECT the
    ``dashboard_*`` views only (and, on Citus, the tables under them), read-only by
    default. ``agentdocket migrate`` keeps these grants when it re-creates the views."""
    views = readers.views(PREFIX)
    if not views:
        raise StoreError("this database has no dashboard views: run `agentdocket migrate`")
    tables = readers.tables_under(views)
    readers.grant(name, password, views + tables)
    return Granted(views, tables)


def drop_dashboard_role(readers: Readers, name: str) -> bool:
    """Take the role's rights in this database away, one object at a time (on Citus, on
    every node), and drop it; False when there is no such role. A role that still has rights
    in another database cannot be dropped: run it there first."""
    return readers.revoke(name)
