"""What several migrations do the same way: load a sibling migration (to reuse the SQL it
wrote, frozen as it was), and run a statement as written (which the store's derived objects
do too)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa

VERSIONS = Path(__file__).with_name("versions")


def sibling(stem: str) -> ModuleType:
    """The migration ``versions/<stem>.py``, loaded as a module of its own."""
    path = VERSIONS / f"{stem}.py"
    spec = importlib.util.spec_from_file_location(f"agentdocket_migration_{stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def execute_as_written(statement: str) -> None:
    """Run ``statement`` as written in the migration's transaction (see :func:`run_as_written`)."""
    from alembic import op  # here, not above: the store imports this module outside alembic

    run_as_written(op.get_bind(), statement)


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
