"""Scale benchmark: a year of runs, partitioned by month against unpartitioned, in one run.

    python bench/scale.py [--events 10000000] [--months 12] [--rounds 3] [--url ...]

For each layout in turn, on a fresh PostgreSQL database (one at a time, so that the disk holds
one copy): ``--events`` events (10 per run, with their runs and about five verdicts a run, as
bench/dashboards.py writes them, set-based) spread from the first day of the month ``--months``
months ago until now (so the oldest month is whole). The rollups are refreshed for the last 8
days only, the hours the panels read (a year of hours takes longer to refresh than to load;
bench/dashboards.py times full refreshes). Then, timed (medians of ``--rounds``):

1. reading one run (``Store.read_trace``), an old one and a recent one;
2. scoring the last day: ``interaction.metrics`` (a new version each round, so that it writes)
   over the runs started in the last 24 hours, through ``score_runs``;
3. every dashboard panel for the last 7 days, as Grafana runs them (total and slowest);
4. dropping the oldest month: ``agentdocket retention`` (partitions dropped) against what an
   unpartitioned table needs, DELETE of the month's rows (append-only trigger set aside);
   both then refresh the dropped hours' rollups, as retention does.

With ``--citus`` the two layouts are instead one PostgreSQL server and a Citus cluster (the
coordinator and two workers of scripts/citus-up, ``--citus-url``), the same schema distributed
by ``agentdocket migrate``, and two more figures come first: ingest through ``Store.append``
(events/s, ``--ingest`` events) and scoring (traces/s). For the cluster it prints what each
worker holds of the log and how many tasks the plans of reading one run, scoring's read and
the slowest panel fan out to (EXPLAIN). Ratios are the cluster's time over the single node's
(its rate over the cluster's): above 1, the single node is faster. Both sides commit without
waiting for the disk (``synchronous_commit = off``, as the cluster's test servers are set).

The two layouts: the current schema (migration 0010: ``events``, ``runs`` and ``verdicts``
partitioned by ``run_month``), and the same schema with those three as plain tables (same
columns, keys and indexes), made here from 0010's own downgrade. Ratios are unpartitioned over
partitioned: above 1, partitions are faster.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa
from alembic.operations import Operations
from alembic.runtime.migration import MigrationContext

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentdocket import dashboards  # noqa: E402
from agentdocket.dashboards import panels  # noqa: E402
from agentdocket.dashboards.grafana_role import grant_dashboard_role  # noqa: E402
from agentdocket.dashboards.macros import expand  # noqa: E402
from agentdocket.scorers.runner import score_runs  # noqa: E402
from agentdocket.store import open_store  # noqa: E402
from agentdocket.store.config import parse_url, psycopg_conninfo  # noqa: E402
from agentdocket.store.derived import drop_installed, install  # noqa: E402
from agentdocket.store.migrate import upgrade  # noqa: E402
from bench.citus import citus_database, cluster_report, equal_commits  # noqa: E402
from bench.common import fresh_database, postgres_url  # noqa: E402
from bench.dashboards import ROLE, synthesise, timed  # noqa: E402
from bench.ingest import synthetic_events  # noqa: E402
from bench.scoring import fresh_version  # noqa: E402

LAYOUTS = ("partitioned", "unpartitioned")
CLUSTER = ("single node", "citus")
CITUS_URL = "postgresql+psycopg://agentdocket:agentdocket@127.0.0.1:5440/agentdocket"
RECENT_DAYS = 8  # the hours rolled up: the panels' last 7 days, and a day to spare


def _migration_0010() -> Any:
    path = ROOT / "agentdocket" / "migrations" / "versions" / "0010_time_partitions.py"
    spec = importlib.util.spec_from_file_location("agentdocket_migration_0010", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unpartition(url: str) -> None:
    """The current schema with ``events``, ``runs`` and ``verdicts`` as plain tables: 0010's
    downgrade, then ``run_month`` and the same keys put back (the tables are empty)."""
    m = _migration_0010()
    # Migration 0014 dropped the rollup triggers 0010's downgrade would make again (the store
    # marks stale hours itself): at head there are none to make.
    m._rollup_triggers = lambda create: None
    engine = sa.create_engine(parse_url(url))
    try:
        with engine.begin() as conn:
            readers = drop_installed(conn)
            with Operations.context(MigrationContext.configure(conn)):
                m._postgres_down()
            conn.exec_driver_sql(m.MONTH_FUNCTION)
            conn.exec_driver_sql(
                "CREATE FUNCTION agentdocket_ensure_partitions(months date[]) RETURNS integer "
                "LANGUAGE sql RETURN 0"
            )
            for table, key in m.KEYS.items():
                conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN run_month date NOT NULL")
                conn.exec_driver_sql(
                    f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, "
                    f"ADD PRIMARY KEY ({', '.join((*key, 'run_month'))})"
                )
            with Operations.context(MigrationContext.configure(conn)):
                m._views_down()  # made again over the tables with run_month, as 0010 makes them
                m._views_up_again(postgres=True, by_month=True)
            install(conn, dashboards.objects(), readers)
    finally:
        engine.dispose()


def median_ms(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def read_runs(url: str, rounds: int, end: datetime, months: int) -> dict[str, float]:
    out = {}
    with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
        picks = {
            "read one run (a month old)": end - timedelta(days=30),
            f"read one run ({months - 1} months old)": end - timedelta(days=30 * (months - 1)),
        }
        with open_store(url, migrate=False) as store:
            for label, around in picks.items():
                ids = [
                    str(r[0])
                    for r in conn.execute(
                        "SELECT trace_id FROM runs WHERE started_at BETWEEN %s AND %s LIMIT 50",
                        [around - timedelta(hours=12), around],
                    ).fetchall()
                ]
                rng = random.Random(7)

                def read(ids: list[str] = ids, rng: random.Random = rng) -> None:
                    assert store.reader.read_trace(rng.choice(ids)) is not None

                out[label] = median_ms(read, max(rounds, 5))
    return out


def score_last_day(url: str, rounds: int, end: datetime) -> tuple[float, int]:
    times, runs = [], 0
    with open_store(url, migrate=False) as store:
        for _ in range(rounds):
            scorer = fresh_version("interaction.metrics")
            start = time.perf_counter()
            result = score_runs(
                store, [scorer], since=end - timedelta(days=1), refresh_dashboards=False
            )
            times.append((time.perf_counter() - start) * 1000)
            runs = result.tallies[(scorer.name, scorer.version)].added
    return statistics.median(times), runs


def panels_last_week(
    url: str, rounds: int, end: datetime
) -> tuple[float, float, str, dict[str, float]]:
    window = (
        (end - timedelta(days=7)).isoformat().replace("+00:00", "Z"),
        end.isoformat().replace("+00:00", "Z"),
    )
    values: dict[str, list[str]] = {
        "scorer": ["planner.suffix_match"],
        "version_a": ["1"],
        "version_b": ["1.1"],
        "experiment_dataset": ["dataset-0"],
        "baseline": ["agent-0"],
        "candidate": ["agent-1"],
        "case_id": [""],
        "failing_scorer": [""],
        "failure_type": [""],
        "tool": [""],
        "session_id": [""],  # the newest conversation (the conversations dashboard)
    }
    total, slowest, which = 0.0, 0.0, ""
    each: dict[str, float] = {}
    # as Grafana runs them: connected as the role `agentdocket grafana-role` makes
    password = uuid.uuid4().hex
    with open_store(url, migrate=False) as store:
        assert store.roles.readers is not None  # PostgreSQL
        grant_dashboard_role(store.roles.readers, ROLE, password)
    as_role = parse_url(url).set(username=ROLE, password=password)
    with psycopg.connect(psycopg_conninfo(as_role), autocommit=True) as conn:
        for name in ("agent", "dataset", "version"):
            sql = expand(panels.VARIABLE_SQL[name], {}, *window)
            values[name] = sorted(str(r[0]) for r in conn.execute(sql.encode()).fetchall())
        newest = "SELECT trace_id FROM dashboard_failing_runs ORDER BY time DESC LIMIT 1"
        values["trace_id"] = [str(conn.execute(newest).fetchall()[0][0])]
        for spec in panels.PANELS:
            ms, _ = timed(conn, expand(spec.sql, values, *window), rounds)
            total += ms
            title = f"{spec.dashboard.removeprefix('agentdocket-')}: {spec.title}"
            each[title] = ms
            if ms > slowest:
                slowest, which = ms, title
    return total, slowest, which, each


def drop_oldest(url: str, layout: str, oldest: date) -> tuple[float, int]:
    """Drop the oldest month; milliseconds and the events that went."""
    if layout == "partitioned":
        # a window that starts in the second month: only the oldest is past it
        second = date(oldest.year + oldest.month // 12, oldest.month % 12 + 1, 1)
        keep = f"{(datetime.now(UTC) - datetime(second.year, second.month, 2, tzinfo=UTC)).days}d"
        with open_store(url, migrate=False) as store:
            plan = store.retention.plan(keep)
            assert [m.month for m in plan.drop] == [oldest], plan
            start = time.perf_counter()
            applied = store.retention.apply(plan)
            ms = (time.perf_counter() - start) * 1000
        return ms, applied.dropped[0].rows["events"]
    with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
        start = time.perf_counter()
        with conn.transaction():
            conn.execute(
                "INSERT INTO rollup_stale (hour, what) SELECT DISTINCT "
                "agentdocket_hour(coalesce(started_at, first_ts)), w FROM runs "
                "CROSS JOIN (VALUES ('runs'), ('verdicts')) k(w) WHERE run_month = %s",
                [oldest],
            )
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
            cur = conn.execute("DELETE FROM events WHERE run_month = %s", [oldest])
            gone = cur.rowcount
            conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
            conn.execute("DELETE FROM verdicts WHERE run_month = %s", [oldest])
            conn.execute("DELETE FROM runs WHERE run_month = %s", [oldest])
        with open_store(url, migrate=False) as store:
            store.projections.refresh_dashboards()
        return (time.perf_counter() - start) * 1000, gone


def ingest(url: str, n: int) -> float:
    """Events per second through ``Store.append`` (batches of 1,000), into a store holding
    only what the synthesis wrote."""
    events = list(synthetic_events(n, seed=11))
    with open_store(url, migrate=False) as store:
        start = time.perf_counter()
        result = store.append(events, batch_size=1000)
        seconds = time.perf_counter() - start
    assert result.inserted == len(events), result
    return len(events) / seconds


def score_rate(url: str, end: datetime) -> float:
    """Traces per second scored by ``interaction.metrics`` over the last day."""
    with open_store(url, migrate=False) as store:
        scorer = fresh_version("interaction.metrics")
        start = time.perf_counter()
        result = score_runs(
            store, [scorer], since=end - timedelta(days=1), refresh_dashboards=False
        )
        seconds = time.perf_counter() - start
    return result.tallies[(scorer.name, scorer.version)].added / seconds


def measure(server: str, layout: str, args: argparse.Namespace, end: datetime) -> dict[str, Any]:
    runs = args.events // 10
    # from the first day of the month --months before this one: the oldest month is whole
    first = date(
        end.year - (args.months - end.month + 12) // 12, (end.month - args.months - 1) % 12 + 1, 1
    )
    days = (end.date() - first).days
    made = citus_database(args.citus_url) if layout == "citus" else fresh_database(server)
    with made as url:
        upgrade(url, derived=dashboards.objects())
        if layout == "unpartitioned":
            unpartition(url)
        print(f"[{layout}] synthesising {runs:,} runs over {days} days ...", flush=True)
        start = time.perf_counter()
        counts = synthesise(url, runs, days, end)
        load_s = time.perf_counter() - start
        with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
            # Only the hours the timed panels read are rolled up (a year of hours takes longer
            # to refresh than to load; bench/dashboards.py times full refreshes): older hours
            # are left out of the rollups, and nothing timed here reads them.
            conn.execute(
                "DELETE FROM rollup_stale WHERE hour < %s", [end - timedelta(days=RECENT_DAYS)]
            )
        with open_store(url, migrate=False) as store:
            refreshed = store.projections.refresh_dashboards()
        with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
            conn.execute("ANALYZE")  # what autovacuum would soon do, after the refresh
            [(size,)] = conn.execute("SELECT pg_database_size(current_database())").fetchall()
            [(oldest,)] = conn.execute("SELECT min(run_month) FROM runs").fetchall()
            if layout == "citus":  # and what the workers hold
                [(shards,)] = conn.execute("SELECT sum(shard_size) FROM citus_shards").fetchall()
                size += int(shards or 0)
        print(
            f"[{layout}] {counts['events']:,} events, {counts['verdicts']:,} verdicts, "
            f"{size / 1e9:.1f} GB, loaded in {load_s:.0f} s; rollups: {refreshed}",
            flush=True,
        )
        result: dict[str, Any] = {"counts": counts, "gb": size / 1e9, "load_s": load_s}
        if args.citus:
            result["score the last day, traces/s"] = score_rate(url, end)
            if layout == "citus":
                cluster_report(url, end)
        result.update(read_runs(url, args.rounds, end, args.months))
        result["score the last day"], result["runs scored"] = score_last_day(url, args.rounds, end)
        total, slowest, which, each = panels_last_week(url, args.rounds, end)
        result["panels"] = each
        result["every panel, last 7 days (sum)"] = total
        result["slowest panel"] = slowest
        result["slowest panel is"] = which
        dropping = "unpartitioned" if layout == "unpartitioned" else "partitioned"
        result["drop the oldest month"], result["events dropped"] = drop_oldest(
            url, dropping, oldest
        )
        if args.citus:  # last: the synthetic events fall in months of their own
            result["ingest, events/s"] = ingest(url, args.ingest)
        print(f"[{layout}] {result}", flush=True)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="PostgreSQL server URL (default: the local cluster)")
    parser.add_argument(
        "--layouts", default=",".join(LAYOUTS), help="which to measure (default: both)"
    )
    parser.add_argument(
        "--citus", action="store_true", help="one node against a Citus cluster, not layouts"
    )
    parser.add_argument(
        "--citus-url", default=os.environ.get("AGENTDOCKET_TEST_CITUS_URL", CITUS_URL)
    )
    parser.add_argument("--ingest", type=int, default=50_000, help="events appended (--citus)")
    args = parser.parse_args()
    if args.citus:
        equal_commits()
    end = datetime.now(UTC).replace(microsecond=0)
    server = postgres_url(args.url)
    layouts = CLUSTER if args.citus else LAYOUTS
    try:
        chosen = [x for x in layouts if args.citus or x in args.layouts.split(",")]
        results = {layout: measure(server, layout, args, end) for layout in chosen}
    finally:
        for admin_url in (server, args.citus_url) if args.citus else (server,):
            with psycopg.connect(psycopg_conninfo(parse_url(admin_url)), autocommit=True) as admin:
                admin.execute(f"DROP ROLE IF EXISTS {ROLE}")
    if len(results) < len(layouts):
        return  # one layout: its figures were printed as it went
    if args.citus:
        side_by_side(results, args, "single node", "citus")
        return
    side_by_side(results, args, "partitioned", "unpartitioned")


def side_by_side(results: dict[str, Any], args: argparse.Namespace, a: str, b: str) -> None:
    """The two layouts' figures and a ratio: above 1, the first is faster."""
    first, second = results[a], results[b]
    print(
        f"\n{first['counts']['events']:,} events over {args.months} months "
        f"({first['gb']:.1f} GB {a}, {second['gb']:.1f} GB {b}); median of {args.rounds}, "
        "milliseconds unless a rate"
    )
    print(f"  {'':34} {a:>14} {b:>14} {'ratio':>7}")
    for key, value in first.items():
        if key in (
            "counts",
            "gb",
            "load_s",
            "runs scored",
            "events dropped",
            "slowest panel is",
            "panels",
        ):
            continue
        # above 1, the first layout is faster
        faster = value / second[key] if "/s" in key else second[key] / value
        print(f"  {key:34} {value:14.1f} {second[key]:14.1f} {faster:6.2f}x")
    print(
        f"  runs scored in the last day: {first['runs scored']:,}; events dropped with the "
        f"oldest month: {first['events dropped']:,} ({a}), {second['events dropped']:,} ({b})"
    )
    print(f"  slowest panel: {first['slowest panel is']} / {second['slowest panel is']}")
    value = first["panels"]
    apart = sorted(value, key=lambda t: second["panels"][t] - value[t], reverse=True)
    print(f"  the panels furthest apart ({a}; {b}, ms):")
    for title in apart[:8]:
        print(f"    {title}: {value[title]:.1f}; {second['panels'][title]:.1f}")
    print(f"  load: {first['load_s']:.0f} s {a}, {second['load_s']:.0f} s {b}")


if __name__ == "__main__":
    main()
