"""A read-only PostgreSQL role for Grafana: it can read the ``dashboard_*`` views and nothing
else (a view reads its tables with its owner's rights, so the role needs no grant on them).

On Citus a view's query runs on the workers' shards as the user who reads the view, not as
its owner (citus#1683), and so do the parts Citus plans apart, such as a coordinator table's
rows read beside a distributed table: the role is also granted SELECT on the tables under the
views (so on Citus it can read those tables directly too). Citus copies a
grant or a revoke on one view or table to the workers, but not ``... ON ALL TABLES IN
SCHEMA`` for views: :func:`drop_dashboard_role` revokes object by object, so that the role
can be dropped on every node.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from agentdocket.store.backends import backend_of
from agentdocket.store.backends.citus.ops import IS_COORDINATOR
from agentdocket.store.config import display_url, parse_url, psycopg_conninfo
from agentdocket.store.errors import StoreError

# The tables the views read, through views reading views (granted on Citus).
UNDER_VIEWS = """
    WITH RECURSIVE reads(oid) AS (
        SELECT c.oid FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY(%s)
        UNION
        SELECT d.refobjid FROM reads r
        JOIN pg_rewrite w ON w.ev_class = r.oid
        JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
            AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> r.oid
    )
    SELECT DISTINCT c.relname FROM reads JOIN pg_class c ON c.oid = reads.oid
    WHERE c.relkind IN ('r', 'p') ORDER BY 1
"""
# What names the role in this database: relations and functions with a grant to it.
GRANTED_RELATIONS = """
    SELECT c.relname FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
    WHERE c.relnamespace = 'public'::regnamespace AND a.grantee = %s::regrole
    GROUP BY c.relname ORDER BY 1
"""
GRANTED_FUNCTIONS = """
    SELECT p.oid::regprocedure::text FROM pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
    WHERE p.pronamespace = 'public'::regnamespace AND a.grantee = %s::regrole
    GROUP BY p.oid ORDER BY 1
"""


@dataclass(frozen=True)
class Granted:
    """What the role may read: the views, and on Citus the tables under them."""

    views: list[str]
    tables: list[str]


def _connect(url: str) -> psycopg.Connection[tuple[object, ...]]:
    parsed = parse_url(url)
    if not backend_of(parsed).rollups:
        raise StoreError(f"{display_url(url)}: the dashboards read PostgreSQL; this is not one")
    try:
        return psycopg.connect(psycopg_conninfo(parsed), autocommit=False)
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to {display_url(url)}: {exc}".strip()) from None


def _citus(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(IS_COORDINATOR).fetchone()
    return bool(row and row[0])


def grant_dashboard_role(url: str, name: str, password: str) -> Granted:
    """Create the login role ``name`` (or reset its password), allowed to SELECT the
    ``dashboard_*`` views only (and, on Citus, the tables under them), read-only by
    default. ``agentdocket migrate`` keeps these grants when it re-creates
    the views."""
    conn = _connect(url)
    try:
        with conn.transaction():
            views = [
                str(r[0])
                for r in conn.execute(
                    "SELECT viewname FROM pg_views WHERE schemaname = 'public' "
                    "AND viewname LIKE 'dashboard\\_%' ORDER BY viewname"
                ).fetchall()
            ]
            if not views:
                raise StoreError(
                    f"{display_url(url)} has no dashboard views: run `agentdocket migrate`"
                )
            _login(conn, name, password)
            tables = (
                [str(r[0]) for r in conn.execute(UNDER_VIEWS, [views]).fetchall()]
                if _citus(conn)
                else []
            )
            _grant(conn, sql.Identifier(name), views + tables)
    except psycopg.Error as exc:
        raise StoreError(f"creating the role {name!r} failed: {exc}".strip()) from None
    finally:
        conn.close()
    return Granted(views, tables)


def _login(conn: psycopg.Connection[tuple[object, ...]], name: str, password: str) -> None:
    """Create the login role, or give the one there (with no more than read rights) a new
    password."""
    role = sql.Identifier(name)
    found = conn.execute(
        "SELECT rolsuper OR rolcreatedb OR rolcreaterole OR rolreplication "
        "OR rolbypassrls FROM pg_roles WHERE rolname = %s",
        [name],
    ).fetchone()
    if found is None:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
                role, sql.Literal(password)
            )
        )
    elif found[0]:
        raise StoreError(
            f"role {name!r} exists with more than read rights (superuser, createdb, "
            "createrole, replication or bypassrls); choose another --name"
        )
    else:  # running it again: a new password, and the grants of new views
        conn.execute(sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(password)))


def _grant(
    conn: psycopg.Connection[tuple[object, ...]], role: sql.Identifier, relations: list[str]
) -> None:
    """SELECT on ``relations`` and nothing else of the schema; read-only sessions of at most
    a minute, without JIT."""
    database = sql.Identifier(conn.info.dbname)
    conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, role))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
    conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}").format(role))
    for relation in relations:
        conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(relation), role))
    in_database = sql.SQL("ALTER ROLE {} IN DATABASE {} SET ").format(role, database)
    conn.execute(in_database + sql.SQL("default_transaction_read_only = on"))
    conn.execute(in_database + sql.SQL("statement_timeout = '60s'"))
    # Panels are short aggregations: compiling them with JIT costs more (0.1-1 s) than running
    # them.
    conn.execute(in_database + sql.SQL("jit = off"))


def drop_dashboard_role(url: str, name: str) -> bool:
    """Take the role's rights in this database away, one object at a time (on Citus, on
    every node), and drop it; False when there is no such role. A role that still has rights
    in another database cannot be dropped: run it there first."""
    conn = _connect(url)
    role = sql.Identifier(name)
    try:
        with conn.transaction():
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [name]).fetchone() is None:
                return False
            for (relation,) in conn.execute(GRANTED_RELATIONS, [name]).fetchall():
                conn.execute(
                    sql.SQL("REVOKE ALL ON {} FROM {}").format(sql.Identifier(str(relation)), role)
                )
            for (function,) in conn.execute(GRANTED_FUNCTIONS, [name]).fetchall():
                conn.execute(
                    sql.SQL("REVOKE ALL ON FUNCTION {} FROM {}").format(
                        sql.SQL(str(function)), role
                    )
                )
            database = sql.Identifier(conn.info.dbname)
            for statement in (
                "REVOKE USAGE ON SCHEMA public FROM {role}",
                "REVOKE CONNECT ON DATABASE {db} FROM {role}",
                "ALTER ROLE {role} IN DATABASE {db} RESET ALL",
                "DROP ROLE {role}",
            ):
                conn.execute(sql.SQL(statement).format(role=role, db=database))
    except psycopg.Error as exc:
        raise StoreError(f"dropping the role {name!r} failed: {exc}".strip()) from None
    finally:
        conn.close()
    return True
