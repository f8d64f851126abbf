"""Schema changes go through Alembic, up and down, on both databases."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from agentdocket import dashboards
from agentdocket.dashboards import run, sessions
from agentdocket.store import Derived, open_store
from agentdocket.store.arrivals import Position
from agentdocket.store.backends import backend_of
from agentdocket.store.config import parse_url
from agentdocket.store.derived import digest
from agentdocket.store.errors import StoreError
from agentdocket.store.migrate import (
    current_revision,
    downgrade,
    head_revision,
    installed_digest,
    upgrade,
)
from agentdocket.store.months import months_ahead
from agentdocket.store.projections import RUN_COUNTS
from tests.helpers.factory import T0, run_events, verdict_event

TABLES = {"events", "runs", "verdicts", "judge_calls", "datasets", "cases"}
VIEWS = {"steps", "verdicts_latest"}
DASHBOARD_VIEWS = {  # PostgreSQL only (migration 0004)
    "dashboard_runs",
    "dashboard_verdicts",
    "dashboard_scorer_versions",
    "dashboard_run_tools",
    "dashboard_tool_use",
    "dashboard_similarity",
    "dashboard_reference",
    "dashboard_peer_review",
    "dashboard_peer_decisions",
    "dashboard_grammar",
}
ROLLUP_VIEWS = {  # PostgreSQL only (migration 0005)
    "dashboard_run_stats",
    "dashboard_run_latency",
    "dashboard_verdict_stats",
    "dashboard_verdict_measures",
    "dashboard_verdict_transitions",
    *(f"rollup_{t}_pending" for t in ("runs", "latency", "verdicts", "measures", "transitions")),
}
EXPERIMENTS = {"rollup_experiments"}  # migration 0018; its two views are installed by migrate
ROLLUP_TABLES = {f"rollup_{t}" for t in ("stale", "runs", "latency", "verdicts", "measures")}
ROLLUP_TABLES.add("rollup_transitions")
DEAD_LETTERS = ({"dead_letters"}, {"dead_letters_state"})  # migration 0006
DERIVED = {"derived_objects"}  # migration 0007; the views are installed by migrate
CURSORS = {"scoring_cursors"}  # migration 0008
SAMPLES = {"pipeline_samples", "scoring_samples"}  # migration 0009
MONTHS = {"trace_months"}  # migration 0012
LEDGER = {"arrival_ledger"}  # migration 0015
PEOPLE = {  # migration 0016
    "rubrics",
    "annotators",
    "queues",
    "queue_items",
    "queue_members",
    "queue_claims",
    "call_costs",  # migration 0017
    "rollup_costs",
}
INSTALLED = {o.name for o in dashboards.objects() if o.identity.startswith("VIEW ")}


MONTHLY = re.compile(r"^(events|runs|verdicts)_\d{4}_\d{2}$")  # partitions (migration 0010)


def _objects(url: str) -> tuple[set[str], set[str]]:
    """Tables (but the months' partitions) and views."""
    engine = sa.create_engine(parse_url(url))
    try:
        insp = sa.inspect(engine)
        tables = {t for t in insp.get_table_names() if not MONTHLY.match(t)}
        return tables - {"alembic_version"}, set(insp.get_view_names())
    finally:
        engine.dispose()


def test_up_to_head_down_to_base_and_up_again(bare_url: str) -> None:
    assert current_revision(bare_url) is None
    upgrade(bare_url, derived=dashboards.objects())
    assert current_revision(bare_url) == head_revision()
    if backend_of(bare_url).rollups:
        # the same views as 0004-0006 made, now installed from agentdocket/dashboards
        # (dashboard_experiment_verdicts came after 0006, with no migration)
        made_by_migrations = DASHBOARD_VIEWS | ROLLUP_VIEWS | {"dashboard_dead_letters"}
        later = {
            "dashboard_experiment_verdicts",
            "dashboard_pipeline_samples",
            "dashboard_scoring_samples",
            "dashboard_telemetry_dropped",
            "dashboard_labels",
            "dashboard_call_costs",
            "dashboard_cost_hours",
            "dashboard_experiment_stats",
            "rollup_experiments_pending",
            *(o.name for o in run.objects()),
            *(o.name for o in sessions.objects()),
        }
        assert made_by_migrations | later == INSTALLED
        assert _objects(bare_url) == (
            TABLES
            | ROLLUP_TABLES
            | DEAD_LETTERS[0]
            | DERIVED
            | CURSORS
            | SAMPLES
            | MONTHS
            | LEDGER
            | PEOPLE
            | EXPERIMENTS,
            VIEWS | INSTALLED | DEAD_LETTERS[1],
        )
        downgrade(bare_url, "0015")  # 0018, 0017, 0016
        assert (PEOPLE | EXPERIMENTS).isdisjoint(_objects(bare_url)[0])
        downgrade(bare_url, "0008")
        assert _objects(bare_url) == (
            TABLES | ROLLUP_TABLES | DEAD_LETTERS[0] | DERIVED | CURSORS,
            VIEWS | DEAD_LETTERS[1],
        )
        downgrade(bare_url, "0007")
        assert _objects(bare_url) == (
            TABLES | ROLLUP_TABLES | DEAD_LETTERS[0] | DERIVED,
            VIEWS | DEAD_LETTERS[1],
        )
        downgrade(bare_url, "0006")
        assert _objects(bare_url) == (
            TABLES | ROLLUP_TABLES | DEAD_LETTERS[0],
            VIEWS | DASHBOARD_VIEWS | ROLLUP_VIEWS | DEAD_LETTERS[1] | {"dashboard_dead_letters"},
        )
        downgrade(bare_url, "0005")
        assert _objects(bare_url) == (
            TABLES | ROLLUP_TABLES,
            VIEWS | DASHBOARD_VIEWS | ROLLUP_VIEWS,
        )
        downgrade(bare_url, "0004")
        assert _objects(bare_url) == (TABLES, VIEWS | DASHBOARD_VIEWS)
    else:
        assert _objects(bare_url) == (
            TABLES | DEAD_LETTERS[0] | DERIVED | CURSORS | SAMPLES | MONTHS | PEOPLE,
            VIEWS | DEAD_LETTERS[1],
        )
        downgrade(bare_url, "0015")  # 0018 (nothing on SQLite), 0017, 0016
        assert PEOPLE.isdisjoint(_objects(bare_url)[0])
        downgrade(bare_url, "0008")
        assert _objects(bare_url) == (
            TABLES | DEAD_LETTERS[0] | DERIVED | CURSORS,
            VIEWS | DEAD_LETTERS[1],
        )
        downgrade(bare_url, "0007")
        assert _objects(bare_url) == (TABLES | DEAD_LETTERS[0] | DERIVED, VIEWS | DEAD_LETTERS[1])
        downgrade(bare_url, "0006")
        assert _objects(bare_url) == (TABLES | DEAD_LETTERS[0], VIEWS | DEAD_LETTERS[1])
        downgrade(bare_url, "0005")
        assert _objects(bare_url) == (TABLES, VIEWS)
    downgrade(bare_url, "0003")
    assert _objects(bare_url) == (TABLES, VIEWS)
    downgrade(bare_url, "base")
    assert current_revision(bare_url) is None
    assert _objects(bare_url) == (set(), set())
    upgrade(bare_url)
    with open_store(bare_url) as store:
        assert store.reader.counts() == dict.fromkeys(
            ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"), 0
        )


def _columns(url: str, table: str) -> set[str]:
    engine = sa.create_engine(parse_url(url))
    try:
        return {c["name"] for c in sa.inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def test_arrival_order_up_and_down_with_data(bare_url: str) -> None:
    """0008 gives the events already stored positions in time order, before any new event's,
    and takes them away again on the way down, keeping every event."""
    upgrade(bare_url)
    rng = random.Random(8)
    # three runs stored newest first: after 0008 they are ordered by time
    runs = [run_events(rng, start=T0 + timedelta(minutes=m)) for m in (30, 10, 20)]
    with open_store(bare_url) as store:
        for events in runs:
            store.append(events)
    downgrade(bare_url, "0007")
    assert {"position", "received_at", "tx"}.isdisjoint(_columns(bare_url, "events"))
    upgrade(bare_url)
    late = run_events(rng, start=T0 - timedelta(days=1))  # stored last, the oldest times
    with open_store(bare_url) as store:
        store.append(late)
        arrived = store.arrivals.after(Position(), 10_000)
        assert store.reader.counts()["events"] == sum(map(len, runs)) + len(late)
    assert len(arrived) == sum(map(len, runs)) + len(late)
    positions = [a.position for a in arrived]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    order = list(dict.fromkeys(a.trace_id for a in arrived))
    assert order == [runs[i][0].trace_id for i in (1, 2, 0)] + [late[0].trace_id]
    # only events stored since 0008 know when they arrived
    assert {a.trace_id for a in arrived if a.received_at is not None} == {late[0].trace_id}


def test_upgrading_to_the_rollups_marks_what_is_stored_stale(empty_pg_url: str) -> None:
    """Runs stored before migration 0005 are read live until the first refresh."""
    upgrade(empty_pg_url, "0004")
    engine = sa.create_engine(parse_url(empty_pg_url))
    counts = ", ".join(f"{c}" for c in RUN_COUNTS)
    zeros = ", ".join("0" for _ in RUN_COUNTS)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                f"INSERT INTO runs (trace_id, agent, started_at, first_ts, {counts}) VALUES "
                f"('t1', 'a', '2026-03-01 10:20+00', '2026-03-01 10:20+00', {zeros}), "
                f"('t2', 'a', '2026-03-01 12:59+00', '2026-03-01 12:59+00', {zeros})"
            )
        )
    upgrade(empty_pg_url, derived=dashboards.objects())
    with engine.connect() as conn:
        stale = conn.execute(sa.text("SELECT what, hour FROM rollup_stale")).fetchall()
        hours = {datetime(2026, 3, 1, h, tzinfo=UTC) for h in (10, 12)}
        assert set(stale) == {(w, h) for w in ("runs", "verdicts") for h in hours}
        runs = conn.execute(sa.text("SELECT sum(runs) FROM dashboard_run_stats")).scalar()
        assert runs == 2
    engine.dispose()
    with open_store(empty_pg_url) as store:
        done = store.projections.refresh_dashboards()
        assert done is not None and (done.run_hours, done.verdict_hours) == (2, 2)


def test_migrate_replaces_the_derived_objects_and_keeps_their_readers(empty_pg_url: str) -> None:
    """A role that reads the dashboards' views keeps reading them across migrations that
    re-create them (from 0006, where a migration made them, and at the head); objects no
    longer given are dropped, new ones created, all in the migration's transaction."""
    upgrade(empty_pg_url, "0006")
    engine = sa.create_engine(parse_url(empty_pg_url))
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE ROLE {role} NOLOGIN"))
        conn.execute(sa.text(f"GRANT SELECT ON dashboard_runs TO {role}"))

    def readable() -> set[str]:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT table_name FROM information_schema.role_table_grants "
                    "WHERE grantee = :role AND privilege_type = 'SELECT'"
                ),
                {"role": role},
            )
            return {r[0] for r in rows}

    shared = {o.name for o in dashboards.objects() if o.shared}
    upgrade(empty_pg_url, derived=dashboards.objects())
    assert readable() == shared
    extra = Derived("VIEW dashboard_extra", "CREATE VIEW dashboard_extra AS SELECT 1 AS one", True)
    upgrade(empty_pg_url, derived=[*dashboards.objects(), extra])
    assert readable() == shared | {"dashboard_extra"}
    assert installed_digest(empty_pg_url) != digest(dashboards.objects())
    upgrade(empty_pg_url, derived=dashboards.objects())
    assert "dashboard_extra" not in _objects(empty_pg_url)[1]
    assert installed_digest(empty_pg_url) == digest(dashboards.objects())
    assert readable() == shared
    # a definition the database refuses leaves everything as it was
    broken = Derived("VIEW dashboard_broken", "CREATE VIEW dashboard_broken AS SELECT nope", True)
    with pytest.raises(
        StoreError, match=r'column "nope" does not exist.*creating VIEW dashboard_b'
    ):
        upgrade(empty_pg_url, derived=[*dashboards.objects(), broken])
    assert installed_digest(empty_pg_url) == digest(dashboards.objects())
    assert readable() == shared
    downgrade(empty_pg_url, "base")
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP ROLE {role}"))
    engine.dispose()


def test_the_latest_verdict_is_the_one_with_the_greatest_time_then_id(url: str) -> None:
    """verdicts_latest, which reports, rollups and dashboards all read: per run, step, scorer
    and version, the latest time wins, and on a tie the greater verdict id."""
    open_store(url).close()  # the schema (SQLite's file is made on opening)
    engine = sa.create_engine(parse_url(url))
    rows = [  # verdict_id, subject, version, ts
        ("a", None, "1", "2026-01-01T00:00:01Z"),
        ("b", None, "1", "2026-01-01T00:00:02Z"),
        ("c", None, "1", "2026-01-01T00:00:02Z"),  # ties b: c wins
        ("d", "s1", "1", "2026-01-01T00:00:00Z"),  # a step: its own
        ("e", None, "2", "2026-01-01T00:00:00Z"),  # another version: its own
    ]
    month = min(months_ahead()).isoformat()  # a month with partitions
    with engine.begin() as conn:
        for verdict_id, subject, version, ts in rows:
            conn.execute(
                sa.text(
                    "INSERT INTO verdicts (verdict_id, trace_id, subject_span_id, scorer, "
                    "scorer_version, input_hash, details, ts, run_month) VALUES "
                    "(:v, 't', :s, 'x', :version, 'h', '{}', :ts, :month)"
                ),
                {"v": verdict_id, "s": subject, "version": version, "ts": ts, "month": month},
            )
    with engine.connect() as conn:
        latest = conn.execute(sa.text("SELECT verdict_id FROM verdicts_latest")).fetchall()
    engine.dispose()
    assert sorted(r[0] for r in latest) == ["c", "d", "e"]


def _without_month(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "run_month"} for r in rows]


def _stored(url: str) -> dict[str, list[dict[str, Any]]]:
    with open_store(url) as store:
        return {
            "events": _without_month(store.reader.rows("events", "trace_id, event_id")),
            "runs": _without_month(store.reader.rows("runs", "trace_id")),
            "verdicts": _without_month(store.reader.rows("verdicts", "verdict_id")),
        }


def test_time_partitions_up_and_down_with_data(bare_url: str) -> None:
    """0010 moves what is stored into monthly partitions (PostgreSQL) or gives it its month
    (SQLite), each trace under the month of its earliest event, and moves it back: every row,
    position and projection is kept both ways."""
    upgrade(bare_url)
    rng = random.Random(10)
    boundary = datetime(2026, 1, 31, 23, 59, 59, 950_000, tzinfo=UTC)  # runs into February
    runs = [run_events(rng, start=boundary), run_events(rng, start=T0)]
    with open_store(bare_url) as store:
        for events in runs:
            store.append([*events, verdict_event(events, when=T0 + timedelta(days=60))])
    before = _stored(bare_url)
    downgrade(bare_url, "0009")
    postgres = backend_of(bare_url).partitions
    for table in ("events", "runs", "verdicts"):
        assert "run_month" not in _columns(bare_url, table)
    engine = sa.create_engine(parse_url(bare_url))
    try:
        with engine.connect() as conn:
            if postgres:
                kinds = conn.execute(
                    sa.text(
                        "SELECT relname, relkind FROM pg_class WHERE relname IN "
                        "('events', 'runs', 'verdicts') OR relname LIKE 'events\\_2%'"
                    )
                ).fetchall()
                assert sorted(kinds) == [("events", "r"), ("runs", "r"), ("verdicts", "r")]
            n = conn.execute(sa.text("SELECT count(*) FROM events")).scalar_one()
            assert n == len(before["events"])
    finally:
        engine.dispose()
    upgrade(bare_url)
    assert _stored(bare_url) == before
    with open_store(bare_url) as store:
        months = {
            (r["trace_id"], r["run_month"])
            for table in ("events", "runs", "verdicts")
            for r in store.reader.rows(table, "trace_id")
        }
        assert months == {
            (runs[0][0].trace_id, date(2026, 1, 1)),
            (runs[1][0].trace_id, date(2026, 3, 1)),
        }
        again = store.append([e for events in runs for e in events])
        assert again.inserted == 0
    if postgres:
        parts = {name for name in _objects_with_partitions(bare_url) if name.startswith("events_")}
        assert {"events_2026_01", "events_2026_03"} <= parts


def _objects_with_partitions(url: str) -> set[str]:
    engine = sa.create_engine(parse_url(url))
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_trace_months_are_filled_from_what_is_stored_and_dropped_down(bare_url: str) -> None:
    """0012 records each stored trace's month (a run crossing into February keeps January's,
    a verdict's trace its run's), as the appender then keeps doing; the downgrade drops it."""
    upgrade(bare_url)
    rng = random.Random(12)
    boundary = datetime(2026, 1, 31, 23, 59, 59, 950_000, tzinfo=UTC)
    runs = [run_events(rng, start=boundary), run_events(rng, start=T0)]
    with open_store(bare_url) as store:
        for events in runs:
            store.append([*events, verdict_event(events, when=T0 + timedelta(days=60))])
        recorded = dict(store.recorder.read("SELECT trace_id, run_month FROM trace_months"))
    downgrade(bare_url, "0011")
    assert "trace_months" not in _objects(bare_url)[0]
    upgrade(bare_url)
    with open_store(bare_url) as store:
        filled = dict(store.recorder.read("SELECT trace_id, run_month FROM trace_months"))
        stored = store.recorder.read("SELECT DISTINCT trace_id, run_month FROM events")
    assert filled == recorded == dict(stored)
    assert len(filled) == 2 and sorted(map(str, filled.values()))[0].startswith("2026-01")


def test_the_revisions_read_without_alembic_are_alembics() -> None:
    """The newest revision, read from the numbered files, is Alembic's head; each revision
    revises the one numbered before it (what the reading relies on)."""
    from alembic.script import ScriptDirectory

    from agentdocket.store.migrate import _config

    scripts = ScriptDirectory.from_config(_config())
    assert scripts.get_current_head() == head_revision()
    for script in scripts.walk_revisions():
        number = int(script.revision)
        expected = None if number == 1 else f"{number - 1:04d}"
        assert script.down_revision == expected, script.revision
