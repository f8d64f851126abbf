"""The dashboards' hourly rollups (migration 0005) stay exact: a stale hour is read live until
a refresh replaces its rollup rows, a run that moves hours moves in them, and marks committed
while a refresh runs survive it."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from agentdocket.dashboards.refresh import refresh
from agentdocket.runtime.refresher import Refresher
from agentdocket.store import Opener, open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.db import cli, rounded
from tests.helpers.factory import T0, many_runs, run_events, verdict_event

pytestmark = pytest.mark.postgres

STATS = (
    "dashboard_run_stats",
    "dashboard_run_latency",
    "dashboard_verdict_stats",
    "dashboard_verdict_measures",
    "dashboard_verdict_transitions",
    "dashboard_experiment_stats",
)


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def _snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every hourly view, floats rounded (sums may add up in another order)."""
    out = {}
    with _connect(url) as conn:
        for view in STATS:
            rows = conn.execute(f"SELECT * FROM {view}").fetchall()  # type: ignore[call-overload]
            out[view] = sorted((rounded(r) for r in rows), key=repr)
    return out


def _stale(url: str) -> set[tuple[str, Any]]:
    with _connect(url) as conn:
        return set(conn.execute("SELECT what, hour FROM rollup_stale").fetchall())


def _runs_by_hour(url: str) -> dict[Any, tuple[str, int]]:
    with _connect(url) as conn:
        rows = conn.execute(
            "SELECT time, agent, sum(runs) FROM dashboard_run_stats GROUP BY 1, 2"
        ).fetchall()
    return {t: (agent, int(n)) for t, agent, n in rows}


def test_stale_hours_read_live_and_a_refresh_makes_them_fresh(server_url: str) -> None:
    with open_store(server_url) as store:
        store.append(many_runs(40))
        assert {w for w, _ in _stale(server_url)} == {"runs", "verdicts"}
        live = _snapshot(server_url)
        assert sum(n for _, n in _runs_by_hour(server_url).values()) == 40
        done = store.projections.refresh_dashboards()
        assert done is not None and done.run_hours == 1 and done.verdict_hours == 1
        assert done.rows > 0 and _stale(server_url) == set()
        assert _snapshot(server_url) == live
        again = store.projections.refresh_dashboards()
        assert again is not None and (again.run_hours, again.rows) == (0, 0)


def test_a_run_that_moves_hours_moves_in_the_rollups(server_url: str) -> None:
    events = run_events(random.Random(7), start=T0)
    started, rest = events[0], events[1:]
    with open_store(server_url) as store:
        # The run.started event comes last and 30 minutes earlier: the run's start, agent and
        # hour change after its verdict was rolled up.
        store.append([*rest, verdict_event(events, when=T0 + timedelta(hours=2))])
        store.projections.refresh_dashboards()
        assert _runs_by_hour(server_url) == {}  # not a run until its start arrives
        store.append([dataclasses.replace(started, ts=T0 - timedelta(minutes=30))])
        earlier = T0 - timedelta(hours=1)
        assert _stale(server_url) == {(w, h) for w in ("runs", "verdicts") for h in (T0, earlier)}
        live = _snapshot(server_url)
        assert _runs_by_hour(server_url) == {earlier: ("agent-a", 1)}
        store.projections.refresh_dashboards()
        assert _snapshot(server_url) == live
        assert [r[:6] for r in live["dashboard_verdict_stats"]] == [
            (earlier, earlier, "agent-a", "ds", "planner.suffix_match", "1")
        ]


def test_marks_committed_during_a_refresh_survive_it(server_url: str) -> None:
    with open_store(server_url) as writer, open_store(server_url) as refresher:
        writer.append(many_runs(5, seed=1))
        refresher.projections.refresh_dashboards()
        writer.append(many_runs(5, seed=2))  # the hour is stale again
        # Hold a lock on the hour's rollup row so that the refresh, once it has its snapshot,
        # waits; meanwhile more runs of that hour commit with their marks.
        blocker = _connect(server_url)
        blocker.execute("BEGIN")
        blocker.execute("SELECT 1 FROM rollup_runs FOR UPDATE")
        done: list[Any] = []
        thread = threading.Thread(
            target=lambda: done.append(refresher.projections.refresh_dashboards())
        )
        thread.start()
        with _connect(server_url) as watcher:
            deadline = time.monotonic() + 20
            while (
                time.monotonic() < deadline
                and not watcher.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND query LIKE 'DELETE FROM rollup_runs%'"
                ).fetchall()
            ):
                time.sleep(0.02)
        writer.append(many_runs(5, seed=3))
        blocker.execute("COMMIT")
        blocker.close()
        thread.join(20)
        assert done and done[0].run_hours == 1
        # The refresh saw 10 runs; the last 5 kept their marks, so the views still count them.
        assert {w for w, _ in _stale(server_url)} == {"runs", "verdicts"}
        assert sum(n for _, n in _runs_by_hour(server_url).values()) == 15
        refresher.projections.refresh_dashboards()
        assert _stale(server_url) == set()
        assert sum(n for _, n in _runs_by_hour(server_url).values()) == 15


def test_rebuild_refreshes_and_keeps_the_dashboards(server_url: str) -> None:
    with open_store(server_url) as store:
        store.append(many_runs(30))
        store.projections.refresh_dashboards()
    before = _snapshot(server_url)
    out = cli(server_url, "rebuild")
    assert "dashboards: 1 run hours and 1 verdict hours refreshed" in out
    assert _stale(server_url) == set() and _snapshot(server_url) == before


def test_the_command_and_the_background_refresher(server_url: str, sqlite_url: str) -> None:
    with open_store(server_url) as store:
        store.append(many_runs(10))
    assert "1 run hours and 1 verdict hours refreshed" in cli(server_url, "refresh-dashboards")
    with open_store(server_url) as store:
        store.append(many_runs(10, seed=3))
    refresher = Refresher(Opener(server_url, migrate=False), 0.05)
    refresher.start()
    try:
        deadline = time.monotonic() + 20
        while _stale(server_url) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        refresher.stop()
        refresher.join(5)
    assert _stale(server_url) == set() and refresher.last is not None
    from click.testing import CliRunner

    from agentdocket.cli import main

    result = CliRunner().invoke(main, ["--database", sqlite_url, "refresh-dashboards"])
    assert result.exit_code == 1 and "no dashboard rollups" in result.output
    with open_store(sqlite_url) as store:
        assert store.projections.refresh_dashboards() is None


def test_a_long_history_is_refreshed_a_range_of_hours_at_a_time(server_url: str) -> None:
    rng = random.Random(3)
    events = [e for h in range(5) for e in run_events(rng, start=T0 + timedelta(hours=h))]
    with open_store(server_url) as store:
        store.append(events)
    live = _snapshot(server_url)
    calls: list[tuple[int, int]] = []
    with open_store(server_url, migrate=False) as store:
        assert store.roles.rollups is not None
        done = refresh(
            store.recorder,
            store.roles.rollups,
            chunk_hours=2,
            progress=lambda n, total: calls.append((n, total)),
        )
    assert done is not None
    assert calls == [(2, 5), (4, 5), (5, 5)]
    assert (done.run_hours, done.verdict_hours, done.busy) == (5, 0, False)
    assert _stale(server_url) == set() and _snapshot(server_url) == live
