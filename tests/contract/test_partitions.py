"""Time partitions (migration 0010): a run and everything about it under its month."""

from __future__ import annotations

import random
import threading
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from agentdocket.events import Event, GenericStep
from agentdocket.store import open_store
from agentdocket.store.appending import Appender
from agentdocket.store.backends.postgres.log import VERDICT_KEYS
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.months import month_of, months_ahead
from agentdocket.store.reading import MONTH_OF, RUN, TRACE_EVENTS
from tests.helpers.factory import run_events, verdict_event
from tests.helpers.otlp_server import Server
from tests.helpers.waiting import until

pytestmark = pytest.mark.postgres

BOUNDARY = datetime(2026, 1, 31, 23, 59, 59, 990_000, tzinfo=UTC)  # runs from here cross into Feb
JAN, FEB = date(2026, 1, 1), date(2026, 2, 1)


def _conn(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)


def _partitions(url: str, table: str) -> set[str]:
    with _conn(url) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [table],
        ).fetchall()
    return {str(r[0]) for r in rows}


def _where(url: str, table: str, trace_id: str) -> dict[str, int]:
    """Which partitions hold the trace's rows, and how many each."""
    with _conn(url) as conn:
        rows = conn.execute(
            f"SELECT tableoid::regclass::text, count(*) FROM {table} WHERE trace_id = %s "
            "GROUP BY 1",
            [trace_id],
        ).fetchall()
    return {str(r[0]): int(str(r[1])) for r in rows}


def test_partitions_exist_for_the_months_ahead_and_for_any_month_written(pg_url: str) -> None:
    ahead = {f"{m:%Y_%m}" for m in months_ahead()}
    assert len(ahead) == 4
    for table in ("events", "runs", "verdicts"):
        assert {f"{table}_{m}" for m in ahead} <= _partitions(pg_url, table)
        assert f"{table}_2019_06" not in _partitions(pg_url, table)
    old = run_events(random.Random(1), start=datetime(2019, 6, 3, tzinfo=UTC))
    with open_store(pg_url) as store:
        assert store.append(old).inserted == len(old)
        assert store.ensure_partitions({date(2019, 6, 1)}) == 0  # made already
    for table in ("events", "runs"):
        assert f"{table}_2019_06" in _partitions(pg_url, table)
    assert _where(pg_url, "events", old[0].trace_id) == {"events_2019_06": len(old)}


def test_a_run_across_a_month_boundary_stays_in_its_month_and_a_resent_batch_adds_nothing(
    pg_url: str,
) -> None:
    rng = random.Random(2)
    events = run_events(rng, start=BOUNDARY)
    assert month_of(events[0].ts) == JAN and month_of(events[-1].ts) == FEB
    trace = events[0].trace_id
    with open_store(pg_url) as store:
        assert store.append(events).inserted == len(events)
        counts = store.reader.counts()
        again = store.append(events)
        assert (again.inserted, again.duplicates) == (0, len(events))
        assert store.reader.counts() == counts
        # a late event and a verdict, weeks later, join the run's month; re-sent, nothing
        late = Event.create(
            trace_id=trace,
            span_id="00000000000000aa",
            seq=99,
            ts=BOUNDARY + timedelta(days=20),
            payload=GenericStep(name="late"),
        )
        verdict = verdict_event(events, when=BOUNDARY + timedelta(days=40))
        assert store.append([late, verdict]).inserted == 2
        assert store.append([late, verdict]).inserted == 0
        run = store.reader.run(trace)
        assert run is not None and run["n_events"] == len(events) + 1
    assert _where(pg_url, "events", trace) == {"events_2026_01": len(events) + 2}
    assert _where(pg_url, "runs", trace) == {"runs_2026_01": 1}
    assert _where(pg_url, "verdicts", trace) == {"verdicts_2026_01": 1}


def test_two_writers_of_a_new_trace_agree_on_its_month(pg_url: str) -> None:
    """The first writer's January span and the second's February span of one new trace: the
    second waits for the first to commit, then finds the trace's month stored."""
    events = run_events(random.Random(3), start=BOUNDARY)
    january, february = events[:1], events[-1:]
    assert month_of(february[0].ts) == FEB
    with open_store(pg_url) as first, open_store(pg_url) as second:
        second.ensure_partitions({JAN, FEB})
        done = threading.Event()

        def write_second() -> None:
            second.append(february)
            done.set()

        # the first writer's transaction, held open: an appender over the store's own parts
        appender = Appender(
            first.recorder,
            first.roles.log,
            first.roles.months,
            first.projections,
            first.datasets,
            first.dead_letters,
            first.redactor,
        )
        with first.recorder.write() as conn:
            assert appender.append_on(conn, january) == (1, [])
            writer = threading.Thread(target=write_second)
            writer.start()
            pid = second.recorder.connection.info.backend_pid

            def waiting() -> bool:  # the second writer's session, waiting on a lock
                with _conn(pg_url) as watcher:
                    rows = watcher.execute(
                        "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid]
                    ).fetchall()
                return rows == [("Lock",)]

            until(waiting, "the second writer waiting on the trace's lock")
            assert not done.is_set()
        writer.join(10)
        assert done.is_set()
    assert _where(pg_url, "events", events[0].trace_id) == {"events_2026_01": 2}
    assert _where(pg_url, "runs", events[0].trace_id) == {"runs_2026_01": 1}


def test_update_delete_and_truncate_are_refused_on_the_log_and_on_every_partition(
    pg_url: str,
) -> None:
    events = run_events(random.Random(4), start=BOUNDARY)
    with open_store(pg_url) as store:
        store.append(events)
    statements = [
        "UPDATE events SET kind = 'x'",
        "DELETE FROM events",
        "TRUNCATE events",
        "UPDATE events_2026_01 SET kind = 'x'",
        "DELETE FROM events_2026_01",
        "TRUNCATE events_2026_01",
    ]
    for statement in statements:
        with _conn(pg_url) as conn, pytest.raises(psycopg.Error, match="append-only"):
            conn.execute(statement)
    with open_store(pg_url) as store:
        assert store.reader.counts()["events"] == len(events)


def test_serve_makes_the_months_ahead_that_are_missing(pg_url: str, tmp_path: Path) -> None:
    """A month's partitions dropped while empty (as if the database were migrated months ago)
    are made again by `agentdocket serve` when it starts."""
    coming = sorted(months_ahead())[1:]
    names = [f"{t}_{m:%Y_%m}" for m in coming for t in ("events", "runs", "verdicts")]
    with _conn(pg_url) as conn:
        for name in names:
            conn.execute(f"DROP TABLE {name}")
    assert not set(names) & (_partitions(pg_url, "events") | _partitions(pg_url, "runs"))
    server = Server(pg_url, tmp_path / "spool").start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            made = _partitions(pg_url, "events") | _partitions(pg_url, "runs")
            made |= _partitions(pg_url, "verdicts")
            if set(names) <= made:
                break
            time.sleep(0.2)
        assert set(names) <= made
    finally:
        server.stop()


def _scanned(plan: dict[str, object], prefix: str, planned: bool = False) -> list[str]:
    """The partitions of ``prefix`` a plan (EXPLAIN ANALYZE, JSON) actually read (or, with
    ``planned``, has a node for, read or not)."""
    found = []
    name = plan.get("Relation Name")
    if isinstance(name, str) and name.startswith(prefix) and (planned or plan.get("Actual Loops")):
        found.append(name)
    for child in plan.get("Plans", []):  # type: ignore[attr-defined]
        found += _scanned(child, prefix, planned)
    return found


def test_reading_one_run_by_trace_id_alone_reads_one_partition(pg_url: str) -> None:
    """A run and its events are found by trace id alone: its month from trace_months (one key
    probe), then that month's partition only; the other months' partitions are never read."""
    months = [datetime(2026, m, 10, tzinfo=UTC) for m in (1, 2, 3, 4)]
    runs = [run_events(random.Random(60 + i), start=t) for i, t in enumerate(months)]
    with open_store(pg_url) as store:
        for events in runs:
            store.append(events)
        wanted = runs[1][0].trace_id
        assert store.reader.run(wanted) is not None and len(store.reader.events(wanted)) == len(
            runs[1]
        )
    assert {"runs_2026_01", "runs_2026_03", "runs_2026_04"} <= _partitions(pg_url, "runs")
    with _conn(pg_url) as conn:
        [(month,)] = conn.execute(MONTH_OF.replace("?", "%s"), [wanted]).fetchall()
        assert month == FEB
        for sql, table in ((RUN, "runs_"), (TRACE_EVENTS, "events_")):
            # the month given as a value: the planner leaves the other months out
            [(plan,)] = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + sql.replace("?", "%s"), [wanted, month]
            ).fetchall()
            assert _scanned(plan[0]["Plan"], table) == [f"{table}2026_02"]
            assert _scanned(plan[0]["Plan"], table, planned=True) == [f"{table}2026_02"]


def test_the_runners_verdict_check_reads_the_runs_months_only(pg_url: str) -> None:
    """Which runs a scorer version already judged: read in those runs' months alone (found in
    trace_months first)."""
    months = [datetime(2026, m, 10, tzinfo=UTC) for m in (1, 2, 3)]
    runs = [run_events(random.Random(80 + i), start=t) for i, t in enumerate(months)]
    with open_store(pg_url) as store:
        for events in runs:
            store.append(events)
            store.append([verdict_event(events, "s", "1", when=events[-1].ts)])
        wanted = [runs[1][0].trace_id]
        assert {t for t, _ in store.scoring.verdict_keys("s", "1", wanted)} == set(wanted)
    with _conn(pg_url) as conn:
        [(plan,)] = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + VERDICT_KEYS, ["s", "1", wanted, [FEB]]
        ).fetchall()
    assert _scanned(plan[0]["Plan"], "verdicts_") == ["verdicts_2026_02"]


def _estimate(conn: psycopg.Connection[tuple[object, ...]], sql: str) -> float:
    [(plan,)] = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}").fetchall()
    return float(plan[0]["Plan"]["Plan Rows"])  # type: ignore[index]


def test_every_month_of_runs_has_the_dashboards_statistics_and_the_planner_uses_them(
    pg_url: str,
) -> None:
    """Statistics on a partitioned table do not reach its partitions' scans (migration 0018):
    each month's runs has its own on the expressions the dashboards filter by, so that the
    planner knows how many runs a filter on agent and dataset keeps."""
    start = datetime(2019, 3, 4, tzinfo=UTC)
    rng = random.Random(3)
    runs = [e for _ in range(300) for e in run_events(rng, agent="only", start=start)]
    with open_store(pg_url) as store:
        store.append(runs)
    with _conn(pg_url) as conn:
        stats = {
            str(r[0])
            for r in conn.execute(
                "SELECT s.stxname FROM pg_statistic_ext s JOIN pg_inherits i "
                "ON i.inhrelid = s.stxrelid WHERE i.inhparent = 'runs'::regclass"
            ).fetchall()
        }
        months = _partitions(pg_url, "runs")
        assert "runs_2019_03" in months  # made by the append, after the migration
        assert stats == {f"{m}_dashboard_{x}" for m in months for x in ("agent", "dataset")}
        conn.execute("ANALYZE runs_2019_03")
        kept = _estimate(
            conn,
            "SELECT * FROM runs WHERE run_month = '2019-03-01' "
            "AND coalesce(agent, '(none)') IN ('only', 'other') "
            "AND coalesce(dataset, '(none)') IN ('ds', 'other')",
        )
    # every one of the 300 runs; without the statistics the planner guessed about 1
    assert kept >= 250, kept
