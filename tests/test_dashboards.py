"""The Grafana dashboards: the committed JSON is what dashboards/build.py builds; it follows
Grafana's conventions; and every panel's SQL, with its template variables substituted the way
Grafana does, runs on PostgreSQL seeded by the demo, an IBM import, judges and GRAMMAR, and
returns the columns the panel expects, non-empty. Also the read-only Grafana role."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
import yaml  # type: ignore[import-untyped]
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from psycopg import sql

from agentdocket import scorers
from agentdocket.demo import run_demo
from agentdocket.scorers.base import Outcome
from agentdocket.scorers.runner import score_runs
from agentdocket.store import open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from dashboards import build
from tests.conftest import ROOT, SHARED, _drop, _fresh_pg, cli, require_shared
from tests.test_grammar_eval import RECORDS

DASHBOARDS = ROOT / "dashboards"
IBM_CASE = SHARED / "datasets" / "ibm-coalitions" / "single-models" / "mistral_all"


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


VIEW_NAMES = set(
    _load(ROOT / "agentdocket/migrations/versions/0004_dashboard_views.py", "views_0004").VIEWS
)
FILES = {
    uid: DASHBOARDS / "json" / f"{uid.removeprefix('agentdocket-')}.json" for uid in build.TITLES
}


# --- the JSON ---------------------------------------------------------------------------------


def test_the_committed_json_is_what_the_code_builds() -> None:
    for uid, path in FILES.items():
        assert path.read_text() == build.render(uid), f"{path.name}: run python dashboards/build.py"
    assert sorted(p.name for p in (DASHBOARDS / "json").glob("*.json")) == sorted(
        p.name for p in FILES.values()
    )


def _targets(d: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    for p in d["panels"]:
        for t in p["targets"]:
            yield p, t


def test_dashboards_follow_grafanas_conventions() -> None:
    uids = set()
    for uid, path in FILES.items():
        d = json.loads(path.read_text())
        assert d["uid"] == uid and len(uid) <= 40 and re.fullmatch(r"[a-z0-9-]+", uid)
        uids.add(uid)
        assert d["schemaVersion"] >= 39 and d["title"] and "agentdocket" in d["tags"]
        assert d["time"] == {"from": "now-7d", "to": "now"}
        variables = {v["name"]: v for v in d["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource"
        assert variables["datasource"]["query"] == "grafana-postgresql-datasource"
        for v in variables.values():
            if v["type"] == "query":
                assert v["datasource"] == {
                    "type": "grafana-postgresql-datasource",
                    "uid": "${datasource}",
                }
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
        for p, t in _targets(d):
            assert 0 < p["gridPos"]["w"] <= 24 and p["gridPos"]["h"] > 0
            assert (
                p["datasource"]
                == t["datasource"]
                == {
                    "type": "grafana-postgresql-datasource",
                    "uid": "${datasource}",
                }
            )
            assert t["refId"] and t["rawQuery"] is True and t["editorMode"] == "code"
            assert t["format"] == ("time_series" if p["type"] == "timeseries" else "table")
            used = set(re.findall(r"\$\{?(\w+)", t["rawSql"]))
            unknown = {u for u in used if not u.startswith("__") and u not in variables}
            assert not unknown, f"{p['title']}: undefined variables {unknown}"
            relations = set(re.findall(r"(?<!DISTINCT )\b(?:FROM|JOIN)\s+([a-z_]+)", t["rawSql"]))
            assert relations and all(r in VIEW_NAMES for r in relations), relations
    assert uids == set(build.TITLES)


def test_provisioning_points_at_the_dashboards_and_a_postgresql_datasource() -> None:
    ds = yaml.safe_load((DASHBOARDS / "provisioning/datasources/agentdocket.yaml").read_text())
    [source] = ds["datasources"]
    assert source["type"] == "grafana-postgresql-datasource" and source["isDefault"] is True
    assert source["secureJsonData"]["password"] == "${AGENTDOCKET_PG_PASSWORD}"
    providers = yaml.safe_load(
        (DASHBOARDS / "provisioning/dashboards/agentdocket.yaml").read_text()
    )
    [provider] = providers["providers"]
    compose = yaml.safe_load((DASHBOARDS / "compose.yaml").read_text())
    volumes = compose["services"]["grafana"]["volumes"]
    assert f"./json:{provider['options']['path']}:ro" in volumes
    assert "./provisioning:/etc/grafana/provisioning:ro" in volumes
    env = compose["services"]["grafana"]["environment"]
    needed = set(re.findall(r"\$\{(\w+)\}", json.dumps(ds)))
    assert needed <= set(env), needed - set(env)


# --- the panels' SQL on a seeded database -------------------------------------------------------

REFERENCE = [
    "Rationale.\nConclusion: Match\nScore: 4",
    "Rationale.\nConclusion: Not Match\nScore: 2",
]
PEER = ["Rationale.\nFinal Decision: Perfect", "Rationale.\nFinal Decision: Imperfect"]


def _stricter(trace: Any, config: Any) -> Outcome | None:
    """planner.suffix_match 1.1 for the versions dashboard: extra steps fail."""
    outcome = scorers.get("planner.suffix_match", "1").fn(trace, config)
    if outcome is not None and outcome.passed and outcome.details.get("extra_steps"):
        return Outcome(passed=False, score=0.0, failure_type="planner:extra_steps")
    return outcome


@pytest.fixture(scope="module")
def seeded(pg_template: tuple[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require_shared(IBM_CASE)
    url, name = _fresh_pg(pg_template)
    tmp = tmp_path_factory.mktemp("seed")
    run_demo(url, spool_dir=tmp / "spool")
    cli(url, "import", "ibm-coalitions", str(IBM_CASE), "--dataset", "ibm-mistral")
    results = tmp / "grammar.json"
    results.write_text(json.dumps(RECORDS))
    cli(url, "import", "grammar-results", str(results), "--dataset", "grammar-toy")
    cli(url, "score")
    with open_store(url) as store:
        demo = [r["trace_id"] for r in store.list_runs(dataset="concerts-demo", limit=None)]
        judge = scorers.get("answer.reference", "1")
        judge = dataclasses.replace(
            judge, config={**judge.config, "model": FakeListChatModel(responses=REFERENCE)}
        )
        peers = [
            dataclasses.replace(
                s, config={**s.config, "model": FakeListChatModel(responses=PEER * 3 + PEER[:1])}
            )
            for s in (
                scorers.get(f"review.peer.{t}", "1")
                for t in ("interaction_planning", "tool_employment", "information_synthesis")
            )
        ]
        stricter = dataclasses.replace(
            scorers.get("planner.suffix_match", "1"), version="1.1", fn=_stricter
        )
        score_runs(store, [judge, *peers, stricter], trace_ids=demo)
        ibm = [r["trace_id"] for r in store.list_runs(dataset="ibm-mistral", limit=None)]
        score_runs(store, [stricter], trace_ids=ibm)
    yield url
    _drop(pg_template[0], name)


def _rows(conn: psycopg.Connection[Any], text: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = conn.execute(text.encode())  # type: ignore[call-overload]
    return [d.name for d in cur.description or []], list(cur.fetchall())


@pytest.mark.postgres
def test_every_panel_query_returns_its_columns_on_seeded_data(seeded: str) -> None:
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    values: dict[str, list[str]] = {}
    for name in ("agent", "dataset", "version"):
        _, rows = _rows(conn, build.expand(build.VARIABLE_SQL[name], {}))
        values[name] = sorted(str(r[0]) for r in rows)
        assert values[name], name
    values["scorer"] = ["planner.suffix_match"]
    _, rows = _rows(conn, build.expand(build.VARIABLE_SQL["version_a"], values))
    versions = sorted(str(r[0]) for r in rows)
    assert versions == ["1", "1.1"]
    values["version_a"], values["version_b"] = [versions[0]], [versions[1]]
    timings = {}
    for spec in build.PANELS:
        start = time.perf_counter()
        columns, rows = _rows(conn, build.expand(spec.sql, values))
        timings[spec.title] = time.perf_counter() - start
        assert columns == list(spec.columns), spec.title
        assert rows, f"{spec.dashboard} / {spec.title}: no rows on the seeded data"
    conn.close()
    assert len(timings) == len(build.PANELS) >= 25


@pytest.mark.postgres
def test_the_seeded_panels_show_what_was_seeded(seeded: str) -> None:
    """Spot checks of values against the store: the views are not merely non-empty."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    with open_store(seeded) as store:
        n_runs = store.counts()["runs"]
    assert conn.execute("SELECT count(*) FROM dashboard_runs").fetchone() == (n_runs,)
    decisions = dict(
        conn.execute("SELECT role, count(*) FROM dashboard_peer_decisions GROUP BY 1").fetchall()
    )
    reviews = conn.execute("SELECT count(*) FROM dashboard_peer_review").fetchone()
    assert reviews is not None and decisions == {
        "reviewer": 3 * reviews[0],
        "meta_reviewer": 3 * reviews[0],
    }
    tags = dict(
        conn.execute(
            "SELECT tag, count(*) FROM dashboard_grammar WHERE representative = 1 GROUP BY 1"
        ).fetchall()
    )
    assert tags == {"Gap": 1, "Non-robust": 2, "Robust": 1}
    conn.close()


# --- the read-only role -------------------------------------------------------------------------


@pytest.mark.postgres
def test_the_grafana_role_reads_the_views_and_nothing_else(seeded: str) -> None:
    name = f"grafana_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    out = cli(seeded, "grafana-role", "--name", name, "--password", password)
    assert f"role {name}: SELECT on {len(VIEW_NAMES)} views" in out
    as_role = parse_url(seeded).set(username=name, password=password)
    try:
        with psycopg.connect(psycopg_conninfo(as_role), autocommit=True) as conn:
            [(runs,)] = conn.execute("SELECT count(*) FROM dashboard_runs").fetchall()
            assert runs > 0
            for forbidden in ("SELECT * FROM events", "SELECT * FROM runs"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(forbidden)
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute("CREATE TEMP TABLE t (x int)")
    finally:
        admin = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
        db = sql.Identifier(admin.info.dbname)
        role = sql.Identifier(name)
        for statement in (
            "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}",
            "REVOKE USAGE ON SCHEMA public FROM {role}",
            "REVOKE CONNECT ON DATABASE {db} FROM {role}",
            "ALTER ROLE {role} IN DATABASE {db} RESET ALL",
            "DROP ROLE {role}",
        ):
            admin.execute(sql.SQL(statement).format(role=role, db=db))
        admin.close()


def test_the_role_needs_postgresql(sqlite_url: str) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    result = CliRunner().invoke(main, ["--database", sqlite_url, "grafana-role", "--password", "x"])
    assert result.exit_code == 1 and "not one" in result.output
