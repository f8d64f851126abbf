"""How Citus plans what agentdocket asks of a cluster, read from EXPLAIN on the local cluster
(scripts/citus-up): the store's reads and writes go to the shards whole (one task for one
trace, no intermediate results pulled through the coordinator), and the dashboards' panels
read the coordinator's rollups on the coordinator, never shipping a rollup table to the
workers. The plans are what keeps a cluster's cost per query near one server's
(docs/citus.md, "How the queries are planned")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentdocket import dashboards, scorers
from agentdocket.dashboards import panels
from agentdocket.dashboards.macros import expand
from agentdocket.dashboards.rollups import STATS
from agentdocket.demo import run_demo
from agentdocket.scorers.runner import score_runs
from agentdocket.store import open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.migrate import upgrade
from tests.helpers.citus import Cluster
from tests.helpers.deployment import RULES, recorded

pytestmark = pytest.mark.citus

WINDOW = ("2020-01-01T00:00:00Z", "2100-01-01T00:00:00Z")


@pytest.fixture(scope="module")
def demo(citus_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database of the cluster holding the demo's runs and verdicts, rollups refreshed."""
    name = f"agentdocket_plans_{tmp_path_factory.mktemp('x').name[-6:]}".replace("-", "_")
    url = citus_cluster.make_database(name)
    try:
        upgrade(url, derived=dashboards.objects())
        run_demo(url, spool_dir=tmp_path_factory.mktemp("spool"))
        with open_store(url, migrate=False) as store:
            score_runs(store, [scorers.get(n) for n in RULES], dataset="concerts-demo")
            store.projections.refresh_dashboards()
        yield url
    finally:
        citus_cluster.drop_database(name)


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def _plan(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> dict[str, Any]:
    [(plan,)] = conn.execute(("EXPLAIN (FORMAT JSON) " + sql).encode(), params).fetchall()
    return dict(plan[0]["Plan"])


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every plan node, the coordinator's and those of Citus's subplans (not the workers')."""
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
    for sub in node.get("Distributed Query", {}).get("Subplans", []):
        for stmt in sub.get("PlannedStmt", []):
            yield from _nodes(stmt["Plan"])


def _citus(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in _nodes(plan) if str(n.get("Custom Plan Provider", "")).startswith("Citus")]


def _subplans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for n in _citus(plan) for s in n.get("Distributed Query", {}).get("Subplans", [])]


def _scanned(node: dict[str, Any]) -> set[str]:
    """The relations a plan scans, the tasks' plans included (wherever they run)."""
    found = set()
    for n in _nodes(node):
        if "Relation Name" in n:
            found.add(str(n["Relation Name"]))
        for task in n.get("Distributed Query", {}).get("Job", {}).get("Tasks", []):
            for remote in task.get("Remote Plan", []):
                for stmt in remote:
                    found |= _scanned(stmt["Plan"])
    return found


def _values(conn: psycopg.Connection[Any]) -> dict[str, list[str]]:
    """Every dashboard variable with a value, as Grafana would fill them for the demo."""
    values = {
        name: [str(r[0]) for r in conn.execute(expand(sql, {}, *WINDOW).encode()).fetchall()]
        for name, sql in panels.VARIABLE_SQL.items()
        if name in ("agent", "dataset", "version")
    }
    [(trace,)] = conn.execute("SELECT trace_id FROM runs LIMIT 1").fetchall()
    values |= {
        "scorer": ["planner.suffix_match"],
        "version_a": values["version"][:1],
        "version_b": values["version"][-1:],
        "experiment_dataset": values["dataset"][:1],
        "baseline": ["a"],
        "candidate": ["b"],
        "trace_id": [str(trace)],
    }
    return values | {
        n: [""] for n in ("case_id", "failing_scorer", "failure_type", "tool", "session_id")
    }


def test_no_panel_ships_a_rollup_table_through_the_coordinator(demo: str) -> None:
    """A rollup lives on the coordinator. A panel that read it through a view holding a
    distributed part had Citus copy the whole table (every hour, unfiltered) into an
    intermediate result first: 25,000 rows for a 7-day panel, 0.2 s a panel. The stale hours'
    live part now comes through a function, so the panel runs on the coordinator with its
    filters on the rollup."""
    with _connect(demo) as conn:
        values = _values(conn)
        shipped, local, stats_panels = {}, [], []
        for spec in panels.PANELS:
            plan = _plan(conn, expand(spec.sql, values, *WINDOW))
            title = f"{spec.dashboard}: {spec.title}"
            rollups = {
                t for s in _subplans(plan) for t in _scanned(s["PlannedStmt"][0]["Plan"])
            } & {t for t, _ in STATS.values()}
            if rollups:
                shipped[title] = rollups
            if any(re.search(rf"\b{view}\b", spec.sql) for view in STATS):
                stats_panels.append(title)
                if not _citus(plan):
                    local.append(title)
    assert shipped == {}
    assert len(stats_panels) > 20
    assert sorted(local) == sorted(stats_panels), "a panel of rollups planned off the coordinator"


# The store's statements that Citus plans in more than one step, each with why.
STEPPED: dict[str, str] = {}


def test_the_stores_statements_go_to_the_shards_whole(demo: str) -> None:
    """What a deployment does (scoring, reading runs, following the log, reports, retention's
    plan), statement by statement with its parameters: no intermediate result pulled to the
    coordinator and sent back (a Citus subplan), no repartition between workers, and every
    statement about one trace sent to one shard."""
    with open_store(demo, migrate=False) as store:
        statements = recorded(store)
    distinct = {(q, repr(p)): (q, p) for q, p in statements}  # each run once, in order
    checked, stepped, routed = 0, {}, 0
    with _connect(demo) as conn:
        for query, params in distinct.values():
            if not re.match(r"\s*(SELECT|INSERT|WITH)", query, re.I):
                continue
            if "agentdocket_in_" in query:  # a session's own staging table
                continue
            plan = _plan(conn, query, params)
            if not _citus(plan):
                continue  # the coordinator's own tables
            checked += 1
            text = str(plan)
            if _subplans(plan) or "Dependent Jobs" in text or "repartition" in text:
                stepped[" ".join(query.split())[:100]] = plan
            one = re.search(r"\btrace_id = %s", query)
            if one:
                tasks = [n["Distributed Query"]["Job"]["Task Count"] for n in _citus(plan)]
                assert tasks == [1], query
                routed += 1
    assert checked > 10 and routed >= 3
    assert set(stepped) == set(STEPPED), stepped
