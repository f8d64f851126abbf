"""The Grafana dashboards: the committed JSON is what agentdocket.dashboards.build builds (and
scripts/build_dashboards.py --check agrees); it follows Grafana's conventions; and every panel's
SQL, with its template variables substituted the way Grafana does, runs on PostgreSQL seeded by
the demo, an IBM import, judges and GRAMMAR, and returns the columns the panel expects,
non-empty. Also the read-only Grafana role."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest
import yaml  # type: ignore[import-untyped]
from psycopg.errors import InsufficientPrivilege

from agentdocket import dashboards
from agentdocket.dashboards import alerts, build, panels
from agentdocket.dashboards.macros import expand, variable
from agentdocket.dashboards.measures import MEASURES
from agentdocket.dashboards.panels.common import quantiles
from agentdocket.dashboards.panels.versions import OUTCOME
from agentdocket.store import open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.db import ROOT, SHARED, cli, rounded
from tests.helpers.grafana import drop_role, rows_of, variables

DASHBOARDS = ROOT / "dashboards"
IBM_CASE = SHARED / "datasets" / "ibm-coalitions" / "single-models" / "mistral_all"
IBM_OTHER = IBM_CASE.parent / "mixtral-all"
VIEW_NAMES = {o.name for o in dashboards.objects() if o.shared}
FILES = {uid: DASHBOARDS / build.dashboard_file(uid) for uid in panels.TITLES}


# --- the JSON ---------------------------------------------------------------------------------


def test_the_committed_json_is_what_the_code_builds() -> None:
    for uid, path in FILES.items():
        assert path.read_text() == build.render(uid), (
            f"{path.name}: run python scripts/build_dashboards.py"
        )
    assert sorted(p.name for p in (DASHBOARDS / "json").glob("*.json")) == sorted(
        p.name for p in FILES.values()
    )
    # and the alert rules, with the default thresholds
    assert (DASHBOARDS / build.ALERTS).read_text() == build.render_alerts(alerts.Thresholds()), (
        "dashboards/provisioning/alerting: run python scripts/build_dashboards.py"
    )


def test_the_build_script_checks_the_committed_files() -> None:
    script = ROOT / "scripts/build_dashboards.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


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
            named = set(re.findall(r"(?:\bWITH|,)\s+([a-z_]+)\s+AS\s*\(", t["rawSql"]))  # CTEs
            assert relations - named, relations
            assert all(r in VIEW_NAMES for r in relations - named), relations
    assert uids == set(panels.TITLES)


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


def _panels(conn: psycopg.Connection[Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Every panel's rows (floats rounded: sums may add up in another order), checking that
    each returns its columns and at least one row."""
    values = variables(conn)
    # the demo's questions ran under three strategies, some of which disagree: repeats of an
    # agent ("concerts-qa", every version), the IBM study's runs are not repeated
    repeated = {
        **values,
        "experiment_dataset": ["concerts-demo"],
        "baseline": ["concerts-qa"],
        "candidate": ["concerts-qa"],
    }
    out = {}
    for spec in panels.PANELS:
        found = repeated if spec.title.startswith("Flaky cases") else values
        columns, rows = rows_of(conn, expand(spec.sql, found))
        assert columns == list(spec.columns), spec.title
        assert rows, f"{spec.dashboard} / {spec.title}: no rows on the seeded data"
        assert any(v is not None for r in rows for v in r), spec.title
        out[spec.title] = [rounded(r) for r in rows]
    assert len(out) == len(panels.PANELS) >= 25
    return out


@pytest.mark.postgres
def test_every_panel_query_returns_its_columns_on_seeded_data(seeded: str) -> None:
    """The same rows from the rollups and, with every hour marked stale, from the live path."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    with open_store(seeded) as store:
        store.projections.refresh_dashboards()
    assert conn.execute("SELECT count(*) FROM rollup_stale").fetchone() == (0,)
    rolled = _panels(conn)
    conn.execute(
        "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT agentdocket_hour(time), w "
        "FROM dashboard_runs CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w)"
    )
    assert _panels(conn) == rolled
    with open_store(seeded) as store:
        done = store.projections.refresh_dashboards()
    assert done is not None and done.run_hours > 0 and done.verdict_hours > 0
    assert _panels(conn) == rolled
    measures = {r[0] for r in conn.execute("SELECT DISTINCT measure FROM rollup_measures")}
    assert measures == set(MEASURES)  # every declared measure is computed, and no other
    conn.close()


def _one(conn: psycopg.Connection[Any], text: str) -> list[tuple[Any, ...]]:
    return sorted(
        rounded(float(v) if isinstance(v, Decimal) else v for v in r)
        for r in conn.execute(text.encode()).fetchall()  # type: ignore[call-overload]
    )


@pytest.mark.postgres
def test_the_hourly_views_agree_with_the_row_level_views(seeded: str) -> None:
    """What the panels aggregate from hours is what the same aggregate over runs and
    verdicts gives (the latency quantile: the same 9% bucket as the exact one)."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    for hourly, rows in (
        (
            "SELECT agent, dataset, sum(runs), sum(errors), sum(steps) FROM dashboard_run_stats "
            "GROUP BY 1, 2",
            "SELECT agent, dataset, count(*), sum(is_error), sum(n_steps) FROM dashboard_runs "
            "GROUP BY 1, 2",
        ),
        (
            "SELECT scorer, scorer_version, sum(verdicts), "
            "CAST(sum(passed) AS double precision) / nullif(sum(decided), 0), "
            "sum(score_sum) / nullif(sum(scored), 0) FROM dashboard_verdict_stats GROUP BY 1, 2",
            "SELECT scorer, scorer_version, count(*), avg(pass), avg(score) "
            "FROM dashboard_verdicts GROUP BY 1, 2",
        ),
        (
            "SELECT sum(total) / sum(n), sum(n) FROM dashboard_verdict_measures "
            "WHERE measure = 'cosine'",
            "SELECT avg(cosine), count(cosine) FROM dashboard_similarity",
        ),
        (
            "SELECT label, replace(measure, '_decision', ''), sum(n), sum(total) "
            "FROM dashboard_verdict_measures WHERE measure LIKE '%\\_decision' GROUP BY 1, 2",
            "SELECT judge_model, role, count(*), sum(CASE decision WHEN 'Perfect' THEN 1 ELSE 0 "
            "END) FROM dashboard_peer_decisions GROUP BY 1, 2",
        ),
        (
            "SELECT label, sum(n) FROM dashboard_verdict_measures WHERE measure = 'tag' GROUP BY 1",
            "SELECT tag, count(*) FROM dashboard_grammar WHERE representative = 1 GROUP BY 1",
        ),
        (
            "SELECT label, scorer, sum(n), sum(total) FROM dashboard_verdict_measures "
            "WHERE measure = 'tool' GROUP BY 1, 2",
            "SELECT t.tool, u.scorer, count(*), sum(u.pass) FROM dashboard_tool_use u "
            "JOIN dashboard_run_tools t ON t.trace_id = u.trace_id WHERE u.pass IS NOT NULL "
            "GROUP BY 1, 2",
        ),
        (
            "SELECT dataset, selection, scorer, scorer_version, case_id, "
            "coalesce(failure_type, ''), sum(verdicts), sum(rated), sum(rate_sum), "
            "min(first_run), sum(missing), sum(decided), sum(passes) "
            "FROM dashboard_experiment_stats GROUP BY 1, 2, 3, 4, 5, 6",
            "SELECT dataset, selection, scorer, scorer_version, case_id, "
            "coalesce(failure_type, ''), count(*), count(coalesce(pass, score)), "
            "sum(coalesce(pass, score)), min(trace_id), sum(missing), count(pass), "
            "count(*) FILTER (WHERE pass = 1) "
            "FROM dashboard_experiment_verdicts GROUP BY 1, 2, 3, 4, 5, 6",
        ),
        (
            "SELECT scorer, version_a, version_b, outcome_a, outcome_b, sum(runs) "
            "FROM dashboard_verdict_transitions GROUP BY 1, 2, 3, 4, 5",
            "SELECT a.scorer, a.scorer_version, b.scorer_version, "
            f"{OUTCOME.format(t='a')}, {OUTCOME.format(t='b')}, count(*) "
            "FROM dashboard_verdicts a JOIN dashboard_verdicts b ON b.trace_id = a.trace_id "
            "AND b.scorer = a.scorer AND b.scorer_version <> a.scorer_version "
            "GROUP BY 1, 2, 3, 4, 5",
        ),
    ):
        expected = _one(conn, rows)
        assert expected and _one(conn, hourly) == expected, hourly
    step = 2 ** (1 / 8)
    values = variables(conn)
    for p in (0.1, 0.5, 0.95):
        [(estimate,)] = conn.execute(
            expand(quantiles({"q": p}), values).encode()  # type: ignore[call-overload]
        ).fetchall()
        [(exact, bucket)] = conn.execute(
            "SELECT x, dashboard_latency_bucket(x) FROM (SELECT percentile_disc(%s) "
            "WITHIN GROUP (ORDER BY latency_ms) AS x FROM dashboard_runs) q",
            [p],
        ).fetchall()
        assert step**bucket <= estimate <= step ** (bucket + 1), (p, estimate, exact)
    conn.close()


@pytest.mark.postgres
def test_the_seeded_panels_show_what_was_seeded(seeded: str) -> None:
    """Spot checks of values against the store: the views are not merely non-empty."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    with open_store(seeded) as store:
        n_runs = store.reader.counts()["runs"]
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
    # the experiments dashboard's changed cases are those `agentdocket compare` finds
    [spec] = [s for s in panels.PANELS if s.title == "Cases that regressed and improved"]
    values = {
        "experiment_dataset": ["ibm-mistral"],
        "baseline": ["mistral_all"],
        "candidate": ["mixtral-all"],
    }
    _, rows = rows_of(conn, expand(spec.sql, values))
    changed = {(r[1], r[2]) for r in rows if r[0] == "tools.slot_fill"}
    compared = json.loads(
        cli(
            seeded,
            "compare",
            "--dataset",
            "ibm-mistral",
            "--baseline",
            "mistral_all",
            "--candidate",
            "mixtral-all",
            "--scorer",
            "tools.slot_fill",
            "--format",
            "json",
        )
    )
    assert changed == {(c["case_id"], c["change"]["tools.slot_fill"]) for c in compared["cases"]}
    slot_fill = compared["scorers"]["tools.slot_fill"]
    assert len(changed) == slot_fill["improved"] + slot_fill["regressed"] > 0
    conn.close()


# The experiments panels as the row-level view gives them (what the panels read before the
# experiments rollup, migration 0018, with the runs missing an outcome counted since 0019):
# what the rollup must give again.
def _side_row_level(name: str, extra: str = "") -> str:
    return (
        "SELECT scorer, scorer_version, case_id, CASE WHEN count(pass) > 0 THEN "
        "CAST(sum(pass) AS double precision) / (count(pass) + sum(missing)) "
        "ELSE avg(coalesce(pass, score)) END AS rate, sum(missing) AS missing, "
        "count(*) AS runs, count(*) FILTER (WHERE pass = 1) AS passes, "
        f"count(pass) + sum(missing) AS judged{extra} "
        f"FROM dashboard_experiment_verdicts WHERE dataset = {variable('experiment_dataset')} "
        f"AND selection = {variable(name)} AND $__timeFilter(time) GROUP BY 1, 2, 3"
    )


ROW_FAILURES = ", string_agg(DISTINCT failure_type, ', ') AS failures, min(trace_id) AS trace_id"
ROW_LOST = "(c.missing = c.runs AND b.missing < b.runs)"
ROW_LEVEL = {
    "Per scorer: baseline and candidate, with 95% intervals": (
        "SELECT scorer, scorer_version, side, count(*) AS cases, avg(rate) AS rate, "
        "avg(rate) - 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_low, "
        "avg(rate) + 1.96 * coalesce(stddev_samp(rate), 0) / sqrt(count(*)) AS ci_high, "
        "sum(missing) AS missing_runs, "
        "count(*) FILTER (WHERE passes > 0 AND passes < judged) AS flaky_cases "
        f"FROM (SELECT 'baseline' AS side, b.* FROM ({_side_row_level('baseline')}) b UNION ALL "
        f"SELECT 'candidate', c.* FROM ({_side_row_level('candidate')}) c) s "
        "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
    ),
    "Cases that regressed and improved": (
        f"SELECT b.scorer, b.case_id, CASE WHEN {ROW_LOST} THEN 'lost its answer' "
        "WHEN c.rate < b.rate THEN 'regressed' "
        "ELSE 'improved' END AS change, b.rate AS baseline, c.rate AS candidate, "
        "b.failures AS baseline_failures, c.failures AS candidate_failures, "
        "c.missing AS candidate_missing, "
        "b.trace_id AS baseline_run, c.trace_id AS candidate_run "
        f"FROM ({_side_row_level('baseline', ROW_FAILURES)}) b "
        f"JOIN ({_side_row_level('candidate', ROW_FAILURES)}) c "
        "ON c.scorer = b.scorer AND c.scorer_version = b.scorer_version "
        f"AND c.case_id = b.case_id WHERE (c.rate <> b.rate OR {ROW_LOST}) "
        "ORDER BY 3 DESC, 1, 2 LIMIT 500"
    ),
    "Flaky cases: repeats that disagree": (
        "SELECT side, scorer, scorer_version, case_id, passes, judged, missing, trace_id "
        f"FROM (SELECT 'baseline' AS side, b.* FROM "
        f"({_side_row_level('baseline', ROW_FAILURES)}) b UNION ALL "
        f"SELECT 'candidate', c.* FROM ({_side_row_level('candidate', ROW_FAILURES)}) c) k "
        "WHERE passes > 0 AND passes < judged ORDER BY 1, 2, 3, 4 LIMIT 500"
    ),
}


@pytest.mark.postgres
def test_the_experiments_panels_give_the_rows_the_row_level_view_gave(seeded: str) -> None:
    """For every pair of selections of every dataset with cases: the same rows from the
    experiments rollup, fresh and with every hour stale, as from the row-level view."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True)
    with open_store(seeded) as store:
        store.projections.refresh_dashboards()
    specs = [s for s in panels.PANELS if s.title in ROW_LEVEL]
    assert len(specs) == len(ROW_LEVEL)
    # every dataset's first three ordered pairs of selections, and one selection against itself
    pairs = [
        (str(d), str(a), str(b))
        for d, a, b in conn.execute(
            "SELECT dataset, a, b FROM (SELECT x.dataset, x.selection AS a, y.selection AS b, "
            "row_number() OVER (PARTITION BY x.dataset ORDER BY x.selection, y.selection) AS n "
            "FROM (SELECT DISTINCT dataset, selection FROM dashboard_experiment_verdicts) x "
            "JOIN (SELECT DISTINCT dataset, selection FROM dashboard_experiment_verdicts) y "
            "ON y.dataset = x.dataset AND y.selection <> x.selection) p WHERE n <= 3"
        ).fetchall()
    ]
    pairs.append((pairs[0][0], pairs[0][1], pairs[0][1]))
    assert len({d for d, _, _ in pairs}) >= 2 and len(pairs) >= 4, pairs

    def both() -> list[tuple[str, int]]:
        compared = []
        for dataset, baseline, candidate in pairs:
            values = {
                "experiment_dataset": [dataset],
                "baseline": [baseline],
                "candidate": [candidate],
            }
            for spec in specs:
                _, rolled = rows_of(conn, expand(spec.sql, values))
                _, rows = rows_of(conn, expand(ROW_LEVEL[spec.title], values))
                assert [rounded(r) for r in rolled] == [rounded(r) for r in rows], (
                    spec.title,
                    dataset,
                    baseline,
                    candidate,
                )
                compared.append((spec.title, len(rows)))
        return compared

    fresh = both()
    assert any(n for title, n in fresh if title.startswith("Cases")), "no case ever changed"
    conn.execute(
        "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT agentdocket_hour(time), "
        "'verdicts' FROM dashboard_runs"
    )
    assert both() == fresh
    conn.close()


# --- values that would break out of quotes ------------------------------------------------------

# A quote that ends the literal, a quote after a backslash (not an escape to PostgreSQL) and a
# statement after a semicolon: each would change what a query reads, or the tables, if pasted
# into SQL unescaped.
HOSTILE = ("x' OR '1'='1", "\\'; DROP TABLE runs; --")
ABSENT = "no such value"
MULTI = ("agent", "dataset", "version")  # multi-value variables, "All" in variables()


def _tables(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """Every table of the schema runs is in, with its rows."""
    names = [
        str(r[0])
        for r in conn.execute(
            "SELECT CAST(oid AS regclass) FROM pg_class WHERE relkind IN ('r', 'p') "
            "AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'runs'::regclass) "
            "ORDER BY 1"
        ).fetchall()
    ]
    assert "runs" in names and len(names) > 10, names
    counts = [conn.execute(f"SELECT count(*) FROM {name}").fetchone() for name in names]
    return [(name, int(c[0])) for name, c in zip(names, counts, strict=True) if c is not None]


def _read(conn: psycopg.Connection[Any], sql: str) -> list[str]:
    """A query's rows, floats rounded, in an order that does not depend on the plan."""
    _, rows = rows_of(conn, sql)
    return sorted(repr(rounded(r)) for r in rows)


@pytest.mark.postgres
def test_a_value_that_breaks_quotes_reads_what_an_absent_value_reads(seeded: str) -> None:
    """Each variable of every panel and template variable query, set to a value that would
    end the literal it stands in: the query runs, returns what a value no run has returns (a
    multi-value variable's other values: what they return alone), and changes nothing. As
    the database's owner, who could change anything, in one transaction rolled back after."""
    conn = psycopg.connect(psycopg_conninfo(parse_url(seeded)))
    try:
        values = variables(conn)
        before = _tables(conn)
        queries = {f"{s.dashboard} / {s.title}": s.sql for s in panels.PANELS}
        queries |= {f"variable {name}": sql for name, sql in panels.VARIABLE_SQL.items()}
        checked = set()
        for where, sql in queries.items():
            alone = _read(conn, expand(sql, values))
            for name in sorted(set(re.findall(r"\$\{(\w+):sqlstring\}", sql))):
                nothing = expand(sql, {**values, name: [ABSENT]})
                absent = _read(conn, nothing)
                for value in HOSTILE:
                    hostile = expand(sql, {**values, name: [value]})
                    assert hostile != nothing
                    assert _read(conn, hostile) == absent, (where, name, value)
                if name in MULTI:
                    with_it = {**values, name: [*values[name], HOSTILE[0]]}
                    assert _read(conn, expand(sql, with_it)) == alone, (where, name)
                checked.add(name)
        assert checked == set(values)  # every variable, in some query
        assert _tables(conn) == before
        [(written,)] = conn.execute("SELECT txid_current_if_assigned()").fetchall()
        assert written is None  # the transaction wrote nothing
    finally:
        conn.rollback()
        conn.close()


# --- the read-only role -------------------------------------------------------------------------


@pytest.mark.postgres
def test_the_grafana_role_reads_the_views_and_nothing_else(seeded: str) -> None:
    """... and on Citus the tables under them too, which Citus reads as the reader of a view;
    dropping it takes every right away, on every node."""
    name = f"grafana_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    cli(seeded, "grafana-role", "--name", name, "--password", "first")
    # Again, as after a migration that adds views: a new password, the same read-only rights.
    out = cli(seeded, "grafana-role", "--name", name, "--password", password)
    assert f"role {name}: SELECT on {len(VIEW_NAMES)} views" in out
    as_role = parse_url(seeded).set(username=name, password=password)
    try:
        with psycopg.connect(psycopg_conninfo(as_role), autocommit=True) as conn:
            [(citus,)] = conn.execute(
                "SELECT count(*) FROM pg_extension WHERE extname = 'citus'"
            ).fetchall()
            [(runs,)] = conn.execute("SELECT count(*) FROM dashboard_runs").fetchall()
            assert runs > 0
            _panels(conn)  # every panel, as Grafana would run it
            under = ["events", "runs", "verdicts", "cases", "rollup_runs", "rollup_stale"]
            if citus:
                assert "17 tables (call_costs, cases, datasets, dead_letters, events," in " ".join(
                    out.split()
                )
                for table in under:
                    conn.execute(f"SELECT count(*) FROM {table}")
            for statement in [
                *(f"SELECT * FROM {table}" for table in ([] if citus else under)),
                "SELECT * FROM judge_calls",
                "SELECT * FROM scoring_cursors",
                "SELECT * FROM rollup_measures_pending",
            ]:
                with pytest.raises(InsufficientPrivilege):
                    conn.execute(statement)
            # on Citus it may read the rollup tables, but still write nothing
            refused = psycopg.errors.ReadOnlySqlTransaction if citus else InsufficientPrivilege
            with pytest.raises(refused):
                conn.execute("SELECT * FROM agentdocket_refresh_rollups(now(), now())")
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                conn.execute("CREATE TEMP TABLE t (x int)")
    finally:
        drop_role(seeded, name)
    with psycopg.connect(psycopg_conninfo(parse_url(seeded)), autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [name]).fetchone() is None


def test_the_role_needs_postgresql(sqlite_url: str) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    result = CliRunner().invoke(main, ["--database", sqlite_url, "grafana-role", "--password", "x"])
    assert result.exit_code == 1 and "not one" in result.output


@pytest.mark.postgres
def test_a_role_with_more_than_read_rights_is_refused_and_given_nothing(pg_url: str) -> None:
    from click.testing import CliRunner

    from agentdocket.cli import main

    name = f"grafana_{uuid.uuid4().hex[:8]}"
    conninfo = psycopg_conninfo(parse_url(pg_url))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN CREATEDB")
    try:
        result = CliRunner().invoke(
            main, ["--database", pg_url, "grafana-role", "--name", name, "--password", "x"]
        )
        assert result.exit_code == 1
        assert f"role {name!r} exists with more than read rights" in result.output
        with psycopg.connect(conninfo, autocommit=True) as conn:
            grants = conn.execute(
                "SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = %s",
                [name],
            ).fetchall()
            settings = conn.execute(
                "SELECT count(*) FROM pg_db_role_setting s JOIN pg_roles r "
                "ON r.oid = s.setrole WHERE r.rolname = %s",
                [name],
            ).fetchall()
        assert grants == [(0,)] and settings == [(0,)]
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {name}")
