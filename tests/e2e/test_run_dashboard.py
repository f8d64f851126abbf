"""The run dashboard: a run's trace as Grafana's traces visualisation reads it, its steps,
verdicts and case; and every data link of every dashboard lands on a dashboard and variables
that exist."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import psycopg
import pytest

from agentdocket.dashboards.macros import expand
from agentdocket.dashboards.panels import PANELS, run
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.db import ROOT
from tests.helpers.grafana import rows_of, variables

FIELDS = {
    "traceID": str,
    "spanID": str,
    "parentSpanID": (str, type(None)),
    "operationName": str,
    "serviceName": str,
    "startTime": float,
    "duration": float,
    "tags": list,
    "statusCode": int,
}


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def _spec(title: str) -> Any:
    [spec] = [p for p in PANELS if p.dashboard == run.UID and p.title == title]
    return spec


@pytest.mark.postgres
def test_the_trace_is_a_tree_of_the_runs_steps(seeded: str) -> None:
    with _connect(seeded) as conn:
        values = variables(conn)
        [trace_id] = values["trace_id"]
        columns, rows = rows_of(conn, expand(_spec("Trace").sql, values))
        assert columns == list(FIELDS)
        spans = [dict(zip(columns, r, strict=True)) for r in rows]
        [(steps,)] = conn.execute(
            "SELECT count(*) FROM steps WHERE trace_id = %s", [trace_id]
        ).fetchall()
        started, ended = conn.execute(
            "SELECT extract(epoch FROM started_at) * 1000, "
            "extract(epoch FROM ended_at - started_at) * 1000 FROM runs WHERE trace_id = %s",
            [trace_id],
        ).fetchone()  # type: ignore[misc]
    for span in spans:
        for name, kind in FIELDS.items():
            assert isinstance(span[name], kind), (name, span[name])
        assert span["traceID"] == trace_id and re.fullmatch(r"[0-9a-f]{16}", span["spanID"])
        assert all(set(t) == {"key", "value"} for t in span["tags"])
        assert span["duration"] >= 0 and span["statusCode"] in (1, 2)
    # the run as the root, then one span per step
    assert len(spans) == steps + 1
    [root] = [s for s in spans if s["parentSpanID"] is None]
    assert root["startTime"] == pytest.approx(float(started))
    assert root["duration"] == pytest.approx(float(ended))
    assert Counter(s["spanID"] for s in spans).most_common(1)[0][1] == 1
    ids = {s["spanID"] for s in spans}
    parent = {s["spanID"]: s["parentSpanID"] for s in spans}
    for span in spans:  # every span reaches the root through parents that exist
        seen, at = set(), span["spanID"]
        while parent[at] is not None:
            assert parent[at] in ids and at not in seen
            seen.add(at)
            at = parent[at]
        assert at == root["spanID"]
    # a tool step carries its call and its result as tags; a failing step has status 2
    tool = next(s for s in spans if s["operationName"].startswith("tool "))
    assert {"tool", "arguments", "call_id"} <= {t["key"] for t in tool["tags"]}


@pytest.mark.postgres
def test_the_run_panels_show_the_run_its_verdicts_and_its_case(seeded: str) -> None:
    with _connect(seeded) as conn:
        values = variables(conn)
        [trace_id] = values["trace_id"]
        [(case_id, n_steps, n_verdicts)] = conn.execute(
            "SELECT r.case_id, r.n_steps, (SELECT count(*) FROM verdicts_latest v "
            "WHERE v.trace_id = r.trace_id) FROM runs r WHERE r.trace_id = %s",
            [trace_id],
        ).fetchall()
        _, header = rows_of(conn, expand(_spec("Run").sql, values))
        _, steps = rows_of(conn, expand(_spec("Steps").sql, values))
        _, verdicts = rows_of(conn, expand(_spec("Verdicts").sql, values))
        _, case = rows_of(conn, expand(_spec("Case beside what happened").sql, values))
        # reached by its case id alone: the latest run of that case
        by_case = dict(values, trace_id=[""], case_id=[case_id])
        _, latest = rows_of(conn, expand(_spec("Run").sql, by_case))
        [(newest,)] = conn.execute(
            "SELECT trace_id FROM dashboard_runs WHERE case_id = %s ORDER BY time DESC LIMIT 1",
            [case_id],
        ).fetchall()
        # the list of failing runs, filtered as a failure-type link filters it
        failure = next(v[5] for v in verdicts if v[5] is not None)
        by_failure = dict(values, failure_type=[failure])
        _, failing = rows_of(conn, expand(_spec("Failing runs").sql, by_failure))
    assert [h[0] for h in header] == [trace_id] and header[0][7] == case_id
    assert len(steps) == n_steps
    assert len(verdicts) == n_verdicts and any(v[2] == 0 for v in verdicts)
    assert [c[0] for c in case] == ["question", "plan", "calls", "answer"]
    assert all(c[1] is not None for c in case[:2])
    assert [r[0] for r in latest] == [newest]
    assert failing and {r[6] for r in failing} == {failure}


@pytest.mark.postgres
def test_the_failing_runs_list_filters_on_the_boxes_filled_and_no_other(seeded: str) -> None:
    """An empty text box ('' in Grafana's sqlstring format) filters nothing; a filled one
    lists the failing runs it names, and a value no run has lists none."""
    spec = _spec("Failing runs")
    tools = "trace_id IN (SELECT trace_id FROM dashboard_run_tools WHERE tool = %s)"
    with _connect(seeded) as conn:
        values = variables(conn)  # every filter box empty
        _, listed = rows_of(conn, expand(spec.sql, values))
        [(failing,)] = conn.execute("SELECT count(*) FROM dashboard_failing_runs").fetchall()
        assert failing > 0 and len(listed) == min(failing, 100)
        scorer, case_id, failure = next(
            (r[4], r[3], r[6]) for r in listed if r[6] is not None and r[3] is not None
        )
        [(tool,)] = conn.execute(
            "SELECT min(t.tool) FROM dashboard_run_tools t JOIN dashboard_failing_runs f "
            "USING (trace_id)"
        ).fetchall()
        for name, value, where in (
            ("failing_scorer", scorer, "scorer = %s"),
            ("case_id", case_id, "case_id = %s"),
            ("failure_type", failure, "failure_type = %s"),
            ("tool", tool, tools),
        ):
            _, rows = rows_of(conn, expand(spec.sql, dict(values, **{name: [value]})))
            expected = conn.execute(
                "SELECT trace_id, scorer, scorer_version FROM dashboard_failing_runs "
                f"WHERE {where}",
                [value],
            ).fetchall()
            assert rows and len(rows) == min(len(expected), 100), name
            assert {(r[1], r[4], r[5]) for r in rows} <= set(expected), name
            _, none = rows_of(conn, expand(spec.sql, dict(values, **{name: ["no such value"]})))
            assert none == [], name


def _links(d: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for p in d["panels"]:
        config = p.get("fieldConfig", {})
        for link in config.get("defaults", {}).get("links", []):
            out.append((p["title"], link["url"]))
        for override in config.get("overrides", []):
            for prop in override["properties"]:
                if prop["id"] == "links":
                    out += [(p["title"], link["url"]) for link in prop["value"]]
    return out


def test_every_data_link_lands_on_a_dashboard_and_its_variables() -> None:
    boards = {
        json.loads(path.read_text())["uid"]: json.loads(path.read_text())
        for path in (ROOT / "dashboards" / "json").glob("*.json")
    }
    found = 0
    for d in boards.values():
        for title, url in _links(d):
            parts = urlsplit(url)
            match = re.fullmatch(r"/d/([a-z0-9-]+)/", parts.path)
            assert match and match.group(1) in boards, (title, url)
            target = boards[match.group(1)]
            names = {v["name"] for v in target["templating"]["list"]}
            assert "${__url_time_range}" in url, (title, url)
            query = parts.query.replace("${__url_time_range}", "")
            for key, value in parse_qsl(query, keep_blank_values=True):
                assert key.startswith("var-") and key[4:] in names, (title, url)
                assert value == "${__value.raw}", (title, url)
            found += 1
    # every table column that names a run, case, tool or failure type links somewhere (but
    # the run dashboard's own trace id, which is the page itself)
    keys = {"trace_id", "case_id", "failure_type", "tool", "baseline_run", "candidate_run"}
    for spec in PANELS:
        wanted = keys & set(spec.columns)
        if spec.kind == "table" and spec.title == "Run":
            wanted -= {"trace_id"}
        if spec.kind == "table":
            assert wanted <= set(spec.links), (spec.dashboard, spec.title, wanted)
    assert found >= 20


def test_the_sessions_panels_show_the_seeded_conversations(seeded: str) -> None:
    """Three conversations: booked in two turns, looped and failed in three, lost in one."""
    from agentdocket.dashboards.panels import sessions

    def panel_rows(title: str, **given: list[str]) -> list[tuple[Any, ...]]:
        [spec] = [p for p in PANELS if p.dashboard == sessions.UID and p.title == title]
        return rows_of(conn, expand(spec.sql, dict(values, **given)))[1]

    with _connect(seeded) as conn:
        values = variables(conn)
        listed = {r[0]: r for r in panel_rows("Sessions")}
        assert {k: (v[2], v[3]) for k, v in listed.items() if k.startswith("s-")} == {
            "s-book": (2, 0),
            "s-loop": (3, 1),
            "s-lost": (1, 1),
        }
        assert {(r[0].strip(), r[1]) for r in panel_rows("Turns per session")} >= {
            ("1", 1),
            ("2", 1),
            ("3", 1),
        }
        completed = {r[1]: r[2] for r in panel_rows("Goal completion")}
        assert completed["session.goal"] == pytest.approx(1 / 3)
        assert completed["session.resolution"] == pytest.approx(1 / 3)
        wrong = {(r[1], r[3]) for r in panel_rows("Sessions that ended in an error or a loop")}
        assert wrong == {
            ("s-loop", "session:repeated_answer"),
            ("s-loop", "session:unanswered_error"),
            ("s-loop", "session:unresolved"),
            ("s-lost", "session:unanswered_error"),
            ("s-lost", "session:unresolved"),
        }
        turns = panel_rows("Turns of the session", session_id=["s-loop"])
        assert [(r[0], r[4]) for r in turns] == [
            (1, "Where is my parcel?"),
            (2, "Where is my parcel? It has not come"),
            (3, "Cancel the order"),
        ]
        [(trace_id,)] = conn.execute(
            "SELECT trace_id FROM dashboard_session_turns WHERE session_id = 's-book' "
            "ORDER BY started_at LIMIT 1"
        ).fetchall()
        [header] = rows_of(conn, expand(_spec("Run").sql, dict(values, trace_id=[trace_id])))[1]
        assert header[-1] == "s-book"  # the run dashboard names (and links to) its session
