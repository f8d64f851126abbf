"""What several migrations do the same way: load a sibling migration (to reuse the SQL it
wrote, frozen as it was), and run a statement as written (as the store's derived objects are:
:func:`agentdocket.store.derived.run_as_written`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from agentdocket.store.derived import run_as_written

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
    from alembic import op  # here, not above: importing this module needs no Alembic

    run_as_written(op.get_bind(), statement)
