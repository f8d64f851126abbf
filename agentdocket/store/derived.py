"""Derived objects: views and functions that hold no data, installed by ``migrate`` from the
definitions the running agentdocket gives, after the versioned migrations.

Versioned migrations change what holds data (tables, triggers, indexes) and are frozen once
released. What only reads data (the dashboards' views, the rollups' refresh function) is
re-created whole by every ``agentdocket migrate`` from the current code, like Flyway's
repeatable migrations: a scorer that changes its details changes its views without a migration.
The store does not know what the objects are; it records the ones it installed in
``derived_objects`` (migration 0007) with a digest of their definitions, drops exactly those
before the next migration, and re-grants the roles that could read them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from agentdocket.store.backends import backend_named

STATE = "derived_objects"


@dataclass(frozen=True)
class Derived:
    """One object: its identity as DROP takes it (``VIEW dashboard_runs``, ``FUNCTION
    f(integer)``), the statement that creates it, and whether roles that read one of the
    ``shared`` objects (the dashboards' layer) read them all."""

    identity: str
    create: str
    shared: bool = False
    dialect: str | None = None  # "postgresql" or "sqlite" for one of them only

    @property
    def name(self) -> str:
        return self.identity.split()[-1].split("(")[0]


def for_dialect(objects: Sequence[Derived], dialect: str) -> list[Derived]:
    return [o for o in objects if o.dialect in (None, dialect)]


def digest(objects: Sequence[Derived]) -> str | None:
    """What a set of definitions is, in 16 hex digits: equal digests, equal objects (filter
    them with :func:`for_dialect` first); None for none, as :func:`installed_digest` says of a
    database where none are installed."""
    if not objects:
        return None
    h = hashlib.sha256()
    for o in objects:
        h.update(f"{o.identity}\0{o.create}\0{o.shared}\0".encode())
    return h.hexdigest()[:16]


def _installed(conn: sa.Connection) -> list[tuple[str, str, bool]]:
    if not sa.inspect(conn).has_table(STATE):
        return []
    rows = conn.exec_driver_sql(
        f"SELECT identity, digest, shared FROM {STATE} ORDER BY position"
    ).fetchall()
    return [(r[0], r[1], bool(r[2])) for r in rows]


# The digest an install recorded (every row holds it): what a store compares with the
# definitions it was given, on its own connection.
DIGEST_SQL = f"SELECT digest FROM {STATE} ORDER BY position LIMIT 1"


def installed_digest(conn: sa.Connection) -> str | None:
    """The digest of what is installed (None before migration 0007 or before any install)."""
    rows = _installed(conn)
    return rows[0][1] if rows else None


def _readers(conn: sa.Connection, names: Sequence[str]) -> list[str]:
    """The roles other than the owner that may SELECT one of ``names`` (PostgreSQL)."""
    if not names or not backend_named(conn.dialect.name).rollups:  # roles: where Grafana reads
        return []
    rows = conn.exec_driver_sql(
        "SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' "
        "ELSE quote_ident(r.rolname) END "
        "FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a "
        "LEFT JOIN pg_roles r ON r.oid = a.grantee "
        "WHERE c.relname = ANY(%(names)s) AND c.relnamespace = 'public'::regnamespace "
        "AND a.privilege_type = 'SELECT' AND a.grantee <> c.relowner ORDER BY 1",
        {"names": list(names)},
    ).fetchall()
    return [r[0] for r in rows]


def drop_installed(conn: sa.Connection, coming: Sequence[Derived] = ()) -> list[str]:
    """Drop what a previous install created, newest first. Returns the roles that could read
    its shared objects or a relation named as one of the ``coming`` shared ones (a first
    install replacing views a migration made), to grant them the next install's."""
    installed = _installed(conn)
    shared = {i.split()[-1] for i, _, s in installed if s} | {o.name for o in coming if o.shared}
    readers = _readers(conn, sorted(shared))
    for identity, _, _ in reversed(installed):
        run_as_written(conn, f"DROP {identity}")
    if installed:
        conn.exec_driver_sql(f"DELETE FROM {STATE}")
    return readers


def install(conn: sa.Connection, objects: Sequence[Derived], readers: Sequence[str]) -> None:
    """Create ``objects`` (those of this database's dialect) in order, record them, and let
    ``readers`` SELECT the shared views."""
    objects = for_dialect(objects, conn.dialect.name)
    stamp = digest(objects) or ""
    for position, o in enumerate(objects):
        try:
            run_as_written(conn, o.create)
        except Exception as exc:
            exc.add_note(f"creating {o.identity}")
            raise
        params: Any = (position, o.identity, stamp, o.shared)
        conn.exec_driver_sql(
            f"INSERT INTO {STATE} (position, identity, digest, shared) VALUES "
            + "({0}, {0}, {0}, {0})".format(backend_named(conn.dialect.name).placeholder),
            params,
        )
        if o.shared and o.identity.startswith("VIEW "):
            for role in readers:
                run_as_written(conn, f"GRANT SELECT ON {o.name} TO {role}")


def run_as_written(conn: sa.Connection, statement: str) -> None:
    """Run ``statement`` as written on ``conn``, through the driver's cursor with no parameters
    (a ``%`` in it, a LIKE pattern, is not a placeholder)."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        cursor.execute(statement)
    finally:
        cursor.close()
