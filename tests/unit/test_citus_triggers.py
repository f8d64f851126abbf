"""Citus sets the dashboards' stale-hour triggers aside and makes them again from its own list
(agentdocket.store.citus): the list is migration 0005's, trigger for trigger."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agentdocket.store.citus import STALE_HOUR_TRIGGERS

MIGRATION = (
    Path(__file__).resolve().parents[2]
    / "agentdocket/migrations/versions/0005_dashboard_rollups.py"
)


def test_the_stale_hour_triggers_are_the_migrations_own() -> None:
    spec = importlib.util.spec_from_file_location("agentdocket_migration_0005", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert list(STALE_HOUR_TRIGGERS) == list(module.TRIGGERS)
