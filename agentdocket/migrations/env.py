"""Alembic environment: the connection comes from agentdocket.store.migrate, not an ini file."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, engine_from_config, pool

config = context.config
connection = config.attributes.get("connection")


def run(conn: Connection) -> None:
    context.configure(connection=conn, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


if connection is not None:
    run(connection)
else:
    engine = engine_from_config(
        {"sqlalchemy.url": config.get_main_option("sqlalchemy.url")}, poolclass=pool.NullPool
    )
    with engine.connect() as conn:
        run(conn)
        conn.commit()
