"""A fresh, migrated database of each kind, by name: what the ``url`` fixture gives."""

from __future__ import annotations

import pytest

# the fixture that makes each kind (conftest.py)
FRESH = {"sqlite": "sqlite_url", "postgresql": "pg_url", "citus": "citus_migrated_url"}
# the kinds as fixture params, Citus's marked (it needs the local cluster)
SERVERS = ["postgresql", pytest.param("citus", marks=pytest.mark.citus)]
EVERY = ["sqlite", *SERVERS]


def fresh_url(request: pytest.FixtureRequest) -> str:
    """The fresh, migrated database of ``request.param``'s kind."""
    return str(request.getfixturevalue(FRESH[request.param]))
