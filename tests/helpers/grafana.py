"""Running the dashboards' SQL as Grafana would: template variables' values and rows."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from agentdocket.dashboards import panels
from agentdocket.dashboards.macros import expand
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.db import cli


def rows_of(conn: psycopg.Connection[Any], text: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = conn.execute(text.encode())  # type: ignore[call-overload]
    return [d.name for d in cur.description or []], list(cur.fetchall())


def variables(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """The template variables' values as Grafana would offer them; two planner versions."""
    values: dict[str, list[str]] = {}
    for name in ("agent", "dataset", "version"):
        _, rows = rows_of(conn, expand(panels.VARIABLE_SQL[name], {}))
        values[name] = sorted(str(r[0]) for r in rows)
        assert values[name], name
    _, rows = rows_of(conn, expand(panels.VARIABLE_SQL["experiment_dataset"], {}))
    assert "ibm-mistral" in {r[0] for r in rows}
    values["experiment_dataset"] = ["ibm-mistral"]
    _, rows = rows_of(conn, expand(panels.VARIABLE_SQL["baseline"], values))
    assert {"mistral_all", "mixtral-all"} <= {r[0] for r in rows}
    values["baseline"], values["candidate"] = ["mistral_all"], ["mixtral-all"]
    values["scorer"] = ["planner.suffix_match"]
    _, rows = rows_of(conn, expand(panels.VARIABLE_SQL["version_a"], values))
    versions = sorted(str(r[0]) for r in rows)
    assert versions == ["1", "1.1"]
    values["version_a"], values["version_b"] = [versions[0]], [versions[1]]
    # the run dashboard: a demo run that failed a scorer, and no filter on the list
    _, rows = rows_of(
        conn,
        "SELECT f.trace_id FROM dashboard_failing_runs f JOIN dashboard_run_tools t "
        "USING (trace_id) WHERE f.dataset = 'concerts-demo' ORDER BY f.trace_id LIMIT 1",
    )
    values["trace_id"] = [rows[0][0]]
    for name in ("case_id", "failing_scorer", "failure_type", "tool", "session_id"):
        values[name] = [""]
    return values


@contextmanager
def grafana_role(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection as a fresh read-only Grafana role (``agentdocket grafana-role``), dropped
    afterwards."""
    name = f"grafana_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    cli(url, "grafana-role", "--name", name, "--password", password)
    as_role = parse_url(url).set(username=name, password=password)
    try:
        with psycopg.connect(psycopg_conninfo(as_role), autocommit=True) as conn:
            yield conn
    finally:
        drop_role(url, name)


def drop_role(url: str, name: str) -> None:
    """Take a Grafana role's rights away and drop it (``agentdocket grafana-role --drop``)."""
    cli(url, "grafana-role", "--name", name, "--drop", "--yes")
