"""What the dashboards need of PostgreSQL: the rollups' locks and refresh transactions, and
read-only logins for Grafana.

A refresh step runs in one repeatable-read transaction holding the partition DDL lock shared
(:func:`.locks.refresh_lock`: no partition made or dropped meanwhile) and the refresh lock, an
advisory lock tried once: another refresh holding it means this one leaves the work to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from agentdocket.store.backends.postgres.errors import mapped_errors
from agentdocket.store.backends.postgres.locks import TRACE_LOCK, refresh_lock
from agentdocket.store.backends.postgres.recorder import PostgresRecorder
from agentdocket.store.errors import StoreError
from agentdocket.store.roles import Readers, Rollups

# One refresh at a time; another finds the lock taken and leaves the work to the first.
REFRESH_LOCK = 0x616764_7266  # "agd" "rf"
INSTALLED = (
    "SELECT to_regprocedure('agentdocket_refresh_rollups(timestamptz, timestamptz)') IS NOT NULL"
)


class PostgresRollups(Rollups):
    def __init__(self, db: PostgresRecorder) -> None:
        self.db = db

    def installed(self) -> bool:
        return bool(self.db.read(INSTALLED)[0][0])

    def lock_runs(self, conn: Any, trace_ids: Sequence[str]) -> None:
        # Taken after every new-trace lock a transaction takes, and waited for only by
        # transactions past theirs: the two kinds never wait on each other in a circle.
        self.db.trace_locks.lock(conn, TRACE_LOCK, trace_ids)

    @contextmanager
    def refreshing(self) -> Iterator[Any | None]:
        conn = self.db.connection
        with mapped_errors(), refresh_lock(conn), conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            [(locked,)] = conn.execute(
                "SELECT pg_try_advisory_xact_lock(%s)", [REFRESH_LOCK]
            ).fetchall()
            yield conn if locked else None


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


class PostgresReaders(Readers):
    """Read-only logins. Citus copies a grant or a revoke on one view or table to the workers,
    but not ``... ON ALL TABLES IN SCHEMA`` for views: :meth:`revoke` goes object by object,
    so that the role can be dropped on every node."""

    def __init__(self, db: PostgresRecorder) -> None:
        self.db = db

    def views(self, prefix: str) -> list[str]:
        pattern = prefix.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%") + "%"
        rows = self.db.read(
            "SELECT viewname FROM pg_views WHERE schemaname = 'public' AND viewname LIKE ? "
            "ORDER BY viewname",
            [pattern],
        )
        return [str(r[0]) for r in rows]

    def tables_under(self, views: Sequence[str]) -> list[str]:
        return []  # a view reads its tables with its owner's rights

    def grant(self, name: str, password: str, relations: Sequence[str]) -> None:
        with self._failing(f"creating the role {name!r}") as conn:
            self._login(conn, name, password)
            self._grant(conn, sql.Identifier(name), relations)

    def revoke(self, name: str) -> bool:
        role = sql.Identifier(name)
        with self._failing(f"dropping the role {name!r}") as conn:
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
        return True

    @contextmanager
    def _failing(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """A transaction on the recorder's connection; a driver error fails it naming
        ``doing``."""
        conn = self.db.connection
        try:
            with conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{doing} failed: {exc}".strip()) from None

    def _login(self, conn: psycopg.Connection[Any], name: str, password: str) -> None:
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
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}"
                ).format(role, sql.Literal(password))
            )
        elif found[0]:
            raise StoreError(
                f"role {name!r} exists with more than read rights (superuser, createdb, "
                "createrole, replication or bypassrls); choose another --name"
            )
        else:  # running it again: a new password, and the grants of new views
            conn.execute(
                sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(role, sql.Literal(password))
            )

    def _grant(
        self, conn: psycopg.Connection[Any], role: sql.Identifier, relations: Sequence[str]
    ) -> None:
        """SELECT on ``relations`` and nothing else of the schema; read-only sessions of at
        most a minute, without JIT."""
        database = sql.Identifier(conn.info.dbname)
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
        conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}").format(role))
        for relation in relations:
            conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(relation), role))
        in_database = sql.SQL("ALTER ROLE {} IN DATABASE {} SET ").format(role, database)
        conn.execute(in_database + sql.SQL("default_transaction_read_only = on"))
        conn.execute(in_database + sql.SQL("statement_timeout = '60s'"))
        # Panels are short aggregations: compiling them with JIT costs more (0.1-1 s) than
        # running them.
        conn.execute(in_database + sql.SQL("jit = off"))


class CitusReaders(PostgresReaders):
    """On Citus a view's query runs on the workers' shards as the user who reads the view, not
    as its owner (citus#1683), and so do the parts Citus plans apart, such as a coordinator
    table's rows read beside a distributed table: the role is also granted SELECT on the
    tables under the views (so on Citus it can read those tables directly too)."""

    def tables_under(self, views: Sequence[str]) -> list[str]:
        return [str(r[0]) for r in self.db.read(UNDER_VIEWS.replace("%s", "?"), [list(views)])]
