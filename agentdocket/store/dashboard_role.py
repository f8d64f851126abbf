"""A read-only PostgreSQL role for Grafana: it can read the ``dashboard_*`` views and nothing
else (a view reads its tables with its owner's rights, so the role needs no grant on them)."""

from __future__ import annotations

import psycopg
from psycopg import sql

from agentdocket.store.backends import backend_of
from agentdocket.store.config import display_url, parse_url, psycopg_conninfo
from agentdocket.store.errors import StoreError


def grant_dashboard_role(url: str, name: str, password: str) -> list[str]:
    """Create the login role ``name`` (or reset its password), allowed to SELECT the
    ``dashboard_*`` views only, read-only by default. Returns the views granted. ``agentdocket
    migrate`` keeps these grants when it re-creates the views."""
    parsed = parse_url(url)
    if not backend_of(parsed).rollups:
        raise StoreError(f"{display_url(url)}: the dashboards read PostgreSQL; this is not one")
    try:
        conn = psycopg.connect(psycopg_conninfo(parsed), autocommit=False)
    except psycopg.OperationalError as exc:
        raise StoreError(f"cannot connect to {display_url(url)}: {exc}".strip()) from None
    role = sql.Identifier(name)
    try:
        with conn.transaction():
            views = [
                r[0]
                for r in conn.execute(
                    "SELECT viewname FROM pg_views WHERE schemaname = 'public' "
                    "AND viewname LIKE 'dashboard\\_%' ORDER BY viewname"
                ).fetchall()
            ]
            if not views:
                raise StoreError(
                    f"{display_url(url)} has no dashboard views: run `agentdocket migrate`"
                )
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
            database = sql.Identifier(conn.info.dbname)
            conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(database, role))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
            conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {}").format(role))
            for view in views:
                conn.execute(sql.SQL("GRANT SELECT ON {} TO {}").format(sql.Identifier(view), role))
            conn.execute(
                sql.SQL(
                    "ALTER ROLE {} IN DATABASE {} SET default_transaction_read_only = on"
                ).format(role, database)
            )
            conn.execute(
                sql.SQL("ALTER ROLE {} IN DATABASE {} SET statement_timeout = '60s'").format(
                    role, database
                )
            )
            # Panels are short aggregations: compiling them with JIT costs more (0.1-1 s) than
            # running them.
            conn.execute(
                sql.SQL("ALTER ROLE {} IN DATABASE {} SET jit = off").format(role, database)
            )
    except psycopg.Error as exc:
        raise StoreError(f"creating the role {name!r} failed: {exc}".strip()) from None
    finally:
        conn.close()
    return views
