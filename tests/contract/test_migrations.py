"""Schema changes go through Alembic, up and down, on both databases."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from agentdocket.store import open_store
from agentdocket.store.config import parse_url
from agentdocket.store.migrate import current_revision, downgrade, head_revision, upgrade
from agentdocket.store.projections import RUN_COUNTS

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
ROLLUP_TABLES = {f"rollup_{t}" for t in ("stale", "runs", "latency", "verdicts", "measures")}
ROLLUP_TABLES.add("rollup_transitions")
DEAD_LETTERS = ({"dead_letters"}, {"dead_letters_state"})  # migration 0006


def _objects(url: str) -> tuple[set[str], set[str]]:
    engine = sa.create_engine(parse_url(url))
    try:
        insp = sa.inspect(engine)
        return set(insp.get_table_names()) - {"alembic_version"}, set(insp.get_view_names())
    finally:
        engine.dispose()


def test_up_to_head_down_to_base_and_up_again(bare_url: str) -> None:
    assert current_revision(bare_url) is None
    upgrade(bare_url)
    assert current_revision(bare_url) == head_revision()
    postgres = parse_url(bare_url).get_backend_name() == "postgresql"
    if postgres:
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
        assert store.counts() == dict.fromkeys(
            ("events", "runs", "steps", "verdicts", "judge_calls", "datasets", "cases"), 0
        )


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
                f"('t2', 'a', NULL, '2026-03-01 12:59+00', {zeros})"
            )
        )
    upgrade(empty_pg_url)
    with engine.connect() as conn:
        stale = conn.execute(sa.text("SELECT what, hour FROM rollup_stale")).fetchall()
        hours = {datetime(2026, 3, 1, h, tzinfo=UTC) for h in (10, 12)}
        assert set(stale) == {(w, h) for w in ("runs", "verdicts") for h in hours}
        runs = conn.execute(sa.text("SELECT sum(runs) FROM dashboard_run_stats")).scalar()
        assert runs == 2
    engine.dispose()
    with open_store(empty_pg_url) as store:
        done = store.refresh_dashboards()
        assert done is not None and (done.run_hours, done.verdict_hours) == (2, 2)
