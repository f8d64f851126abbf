"""Maintenance under traffic (PostgreSQL): retention dropping months, the dashboards' rollup
refresher and ingestion writing late events into the very months being dropped, all at once.
One lock order for everything that makes, drops or reads across partitions: no deadlock, no
error, and a retention whose months were dropped always exits 0 with its report."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from datetime import UTC, date, datetime, timedelta

import psycopg
import pytest

from agentdocket.store import open_store
from agentdocket.store.backends.postgres import locks as postgres_locks
from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.factory import run_events, verdict_event

ROUNDS = 20
CLI = (sys.executable, "-c", "from agentdocket.cli import main; main()")


def _months_ago(n: int) -> datetime:
    today = datetime.now(UTC).date().replace(day=1)
    month = date(today.year, today.month, 1)
    for _ in range(n):
        month = (month - timedelta(days=1)).replace(day=1)
    return datetime(month.year, month.month, 3, 12, tzinfo=UTC)


class _Loop(threading.Thread):
    """``step(i)`` over and over until stopped; every error kept."""

    def __init__(self, url: str, step: str) -> None:
        super().__init__(daemon=True)
        self.url, self.step = url, step
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.done = 0

    def run(self) -> None:
        rng = random.Random(self.step)
        with open_store(self.url) as store:
            while not self.stop.is_set():
                try:
                    if self.step == "refresh":
                        store.projections.refresh_dashboards()
                    else:  # a run now and a late one in each month retention is dropping
                        for start in (datetime.now(UTC), _months_ago(rng.randint(3, 5))):
                            events = run_events(rng, start=start + timedelta(minutes=rng.random()))
                            store.append([*events, verdict_event(events, when=start)])
                except BaseException as exc:  # every error is the finding
                    self.errors.append(exc)
                self.done += 1


@pytest.mark.slow
def test_retention_refresh_and_late_ingestion_never_deadlock(server_url: str) -> None:
    rng = random.Random(29)
    with open_store(server_url) as store:
        for n in (3, 4, 5):
            events = run_events(rng, start=_months_ago(n))
            store.append([*events, verdict_event(events, when=_months_ago(n))])
    loops = [_Loop(server_url, "ingest"), _Loop(server_url, "refresh")]
    for loop in loops:
        loop.start()
    outcomes = []
    try:
        for _ in range(ROUNDS):
            done = subprocess.run(
                [
                    *CLI,
                    "--database",
                    server_url,
                    "retention",
                    "--keep",
                    "40d",
                    "--format",
                    "json",
                    "--yes",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            outcomes.append((done.returncode, done.stdout, done.stderr))
    finally:
        for loop in loops:
            loop.stop.set()
            loop.join()
    failures = [(code, err) for code, _, err in outcomes if code != 0]
    assert not failures, failures[0]
    reports = [json.loads(out) for _, out, _ in outcomes]
    assert sum(len(r["dropped"]) for r in reports) >= ROUNDS  # late events kept remaking months
    assert [e for loop in loops for e in loop.errors] == []
    assert all(loop.done > 0 for loop in loops)


def test_a_month_whose_tables_stay_busy_is_kept_and_reported(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader holding the log open past the budget: retention gives up on the month (holding
    nothing meanwhile, so the reader is never a deadlock victim), keeps it, says why; once
    the reader is gone the same retention drops it."""
    monkeypatch.setattr(postgres_locks, "BUDGET_S", 1.0)
    rng = random.Random(7)
    with open_store(pg_url) as store:
        events = run_events(rng, start=_months_ago(4))
        store.append(events)
        with psycopg.connect(psycopg_conninfo(parse_url(pg_url))) as reader:
            reader.execute("SELECT count(*) FROM runs").fetchall()  # its transaction stays open
            applied = store.retention.apply(store.retention.plan("40d"))
            assert reader.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]
        assert applied.dropped == [] and applied.trace_id is None
        [(month, why)] = applied.failed
        assert month.rows["runs"] == 1 and "stayed busy for 1 s; nothing was changed" in why
        assert store.reader.run(events[0].trace_id) is not None
        again = store.retention.apply(store.retention.plan("40d"))
        assert [m.rows["runs"] for m in again.dropped] == [1] and again.failed == []
        assert store.reader.run(events[0].trace_id) is None
