"""Ready to distribute (Citus): the live schema, its views and the store's own queries keep to
the rules of agentdocket.store.backends.citus.distribution."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentdocket import dashboards
from agentdocket.dashboards import panels
from agentdocket.dashboards.macros import expand
from agentdocket.demo import run_demo
from agentdocket.store import open_store
from agentdocket.store.backends.citus.distribution import (
    COORDINATOR,
    DISTRIBUTED,
    REFERENCE,
    citus_sql,
)
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.colocation import problems, trace_views
from tests.helpers.deployment import recorded

pytestmark = pytest.mark.postgres

# Views that Citus could not yet run on the workers, each with why (docs/operations.md): a
# new one fails the test, and one that stops being an exception must leave this list.
NOT_YET: dict[str, str] = {}


@pytest.fixture(scope="module")
def schema(pg_template: tuple[str, str]) -> Iterator[tuple[str, psycopg.Connection[Any]]]:
    from tests.helpers.db import drop_database, fresh_pg

    url, name = fresh_pg(pg_template)
    open_store(url, derived=dashboards.objects()).close()  # the dashboards' views too
    conn = psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)
    yield url, conn
    conn.close()
    drop_database(pg_template[0], name)


def _rows(conn: psycopg.Connection[Any], sql: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql).fetchall()


def test_every_table_has_its_place(schema: tuple[str, psycopg.Connection[Any]]) -> None:
    _, conn = schema
    tables = {
        str(r[0])
        for r in _rows(
            conn,
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace "
            "AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
        )
    }
    placed = set(DISTRIBUTED) | REFERENCE | COORDINATOR
    assert tables == placed, (
        "a new table needs its place in agentdocket.store.backends.citus.distribution"
    )
    assert not (set(DISTRIBUTED) & REFERENCE) and not (set(DISTRIBUTED) & COORDINATOR)


def test_unique_indexes_hold_the_distribution_column(
    schema: tuple[str, psycopg.Connection[Any]],
) -> None:
    _, conn = schema
    rows = _rows(
        conn,
        "SELECT t.relname, i.relname, array_agg(a.attname ORDER BY a.attname) "
        "FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid "
        "JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey) "
        "WHERE x.indisunique AND t.relnamespace = 'public'::regnamespace "
        "AND NOT t.relispartition GROUP BY 1, 2",
    )
    checked = 0
    for table, index, columns in rows:
        if table in DISTRIBUTED:
            assert DISTRIBUTED[table] in columns, f"{index} on {table}: {columns}"
            checked += 1
    assert checked >= len(DISTRIBUTED)  # each has at least its primary key


def test_foreign_keys_stay_among_reference_tables(
    schema: tuple[str, psycopg.Connection[Any]],
) -> None:
    _, conn = schema
    keys = _rows(
        conn,
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
        "WHERE contype = 'f' AND connamespace = 'public'::regnamespace",
    )
    assert keys and all(a in REFERENCE and b in REFERENCE for a, b in keys), keys


def test_the_citus_statements_name_every_distributed_and_reference_table() -> None:
    text = "\n".join(citus_sql())
    for table in [*DISTRIBUTED, *REFERENCE]:
        assert f"'{table}'" in text
    assert text.index("'datasets'") < text.index("'cases'") < text.index("'events'")
    assert "create_distributed_table('runs', 'trace_id', colocate_with => 'events')" in text


@pytest.mark.parametrize(
    ("sql", "fine"),
    [
        ("SELECT 1 FROM runs a JOIN verdicts v ON v.trace_id = a.trace_id", True),
        ("SELECT 1 FROM runs a JOIN verdicts v USING (trace_id)", True),
        ("SELECT 1 FROM runs a JOIN verdicts v ON v.scorer = a.agent", False),
        ("SELECT 1 FROM runs a, events e WHERE e.kind = a.status", False),
        (
            "SELECT 1 FROM runs a WHERE EXISTS (SELECT 1 FROM events e "
            "WHERE e.trace_id = a.trace_id)",
            True,
        ),
        ("SELECT 1 FROM runs a WHERE EXISTS (SELECT 1 FROM events e WHERE e.ts > a.ts)", False),
        (
            "SELECT 1 FROM runs d CROSS JOIN LATERAL (SELECT count(*) FROM events e "
            "WHERE e.trace_id = d.trace_id) t",
            True,
        ),
        ("SELECT 1 FROM runs WHERE trace_id IN (SELECT trace_id FROM verdicts)", True),
        (
            "SELECT 1 FROM (SELECT case_id, min(trace_id) AS trace_id FROM runs GROUP BY 1) b "
            "JOIN (SELECT case_id, min(trace_id) AS trace_id FROM runs GROUP BY 1) c "
            "ON c.case_id = b.case_id",
            True,
        ),  # aggregates: Citus joins the results
        ("SELECT 1 FROM runs r JOIN cases c ON c.case_id = r.case_id", True),  # reference
        (  # correlated on the coordinator's rows, which Citus sends to every shard
            "SELECT 1 FROM (SELECT DISTINCT hour FROM rollup_stale) h CROSS JOIN LATERAL "
            "(SELECT DISTINCT r.trace_id FROM runs r WHERE r.started_at >= h.hour) r",
            True,
        ),
        (
            "SELECT 1 FROM runs a CROSS JOIN LATERAL (SELECT DISTINCT e.trace_id FROM events e "
            "WHERE e.ts >= a.started_at) e",
            False,
        ),
    ],
)
def test_the_check_tells_joins_on_the_key_from_others(sql: str, fine: bool) -> None:
    assert (problems(sql, set()) == []) is fine


def _views(conn: psycopg.Connection[Any]) -> dict[str, str]:
    return {
        str(name): str(definition)
        for name, definition in _rows(
            conn, "SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'"
        )
    }


def test_every_view_joins_trace_tables_on_trace_id(
    schema: tuple[str, psycopg.Connection[Any]],
) -> None:
    _, conn = schema
    views = _views(conn)
    keyed = trace_views(views)
    assert {"steps", "verdicts_latest", "dashboard_runs", "dashboard_verdicts"} <= keyed
    found = {name: problems(sql, keyed) for name, sql in views.items()}
    assert {name for name, p in found.items() if p} == set(NOT_YET)
    assert len(views) > 30


def test_every_panel_joins_trace_tables_on_trace_id(
    schema: tuple[str, psycopg.Connection[Any]],
) -> None:
    _, conn = schema
    keyed = trace_views(_views(conn))
    window = ("2026-11-01T00:00:00Z", "2026-11-08T00:00:00Z")
    names = ("agent", "dataset", "version", "scorer", "version_a", "version_b", "trace_id")
    values = {name: ["x"] for name in names}
    boxes = ("case_id", "failing_scorer", "failure_type", "tool", "session_id")
    values |= {name: [""] for name in boxes}
    values |= {name: ["x"] for name in ("experiment_dataset", "baseline", "candidate")}
    found = {}
    for spec in panels.PANELS:
        sql = expand(spec.sql, values, *window)
        found[f"{spec.dashboard}: {spec.title}"] = problems(sql, keyed)
    assert {name: p for name, p in found.items() if p} == {}


def test_the_stores_queries_join_trace_tables_on_trace_id(
    schema: tuple[str, psycopg.Connection[Any]], tmp_path: Any
) -> None:
    url, conn = schema
    run_demo(url, spool_dir=tmp_path / "spool")
    keyed = trace_views(_views(conn))
    with open_store(url, migrate=False) as store:
        seen = [query for query, _ in recorded(store)]
    statements = [s for s in seen if re.match(r"\s*(SELECT|INSERT|WITH)", s, re.I)]
    assert len(statements) > 20
    found = {}
    for sql in statements:
        sql = sql.replace("%s", "NULL")
        if p := problems(sql, keyed):
            found[sql[:120]] = p
    assert found == {}
