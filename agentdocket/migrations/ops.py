"""What several migrations do the same way: load a sibling migration (to reuse the SQL it
wrote, frozen as it was), and run a statement as written."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

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
    """Run ``statement`` as written, through the driver's cursor with no parameters (a ``%``
    in it is not a placeholder)."""
    dbapi = op.get_bind().connection.dbapi_connection
    assert dbapi is not None
    cursor = dbapi.cursor()
    try:
        cursor.execute(statement)
    finally:
        cursor.close()
