"""Dashboard benchmark: every panel's query (and every template variable's) at scale.

    python bench/dashboards.py [--runs 1000000] [--rounds 3] [--days 30] [--range-days 7]
                               [--keep NAME]

On a fresh PostgreSQL database at the current schema, it synthesises ``--runs`` runs spread
over ``--days`` days, with 10 events each (started, plan, 3 tool calls with their returns,
response, finished: 10M events for 1M runs) and their verdicts: planner, slot filling,
procedural and similarity on every run, a second planner version on half of them, reference
judgements on 30%, peer review (3 sub-tasks) on 10%, GRAMMAR on one dataset's 10%; the costs of
two model calls a run (``call_costs``) and two annotators' labels on 1% of the runs; 30% of the
runs are turns of conversations (an agent's turns within two minutes) whose last turns carry
four session scorers' verdicts. The rows are
written with set-based SQL straight into the tables (the store's append path is measured by
bench/ingest.py); the projections are written consistently with the events. Then each panel's
SQL, expanded as Grafana expands it for the default range (the last ``--range-days`` days) with
every variable at "All", is timed: the median of ``--rounds``. Target: every panel < 200 ms;
the run dashboard's panels, which read the newest failing run, < 50 ms (its list of failing
runs, 200 ms).

The synthesis writes past the store, which marks the hours it changes stale, so it marks every
hour stale itself, and a full refresh of the rollups is timed first. Then the panels, three
times: on fresh rollups; with the newest hour's runs stale, as while agents record (read live);
and with its verdicts stale too, as after scoring outside the runner, before a refresh. The
panels run as Grafana runs them, connected as the role ``agentdocket grafana-role`` creates.

Each figure is printed beside the previous run's at the same ``--runs`` (kept in
bench/.results/), and the summary line names every panel over its target in any of the three
states. ``--keep NAME`` synthesises into database NAME once and keeps it: later runs migrate
it to the current schema (as ``agentdocket migrate``) and time the panels again, minutes
instead of twenty.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentdocket import dashboards  # noqa: E402
from agentdocket.dashboards import panels  # noqa: E402
from agentdocket.dashboards.grafana_role import (  # noqa: E402
    drop_dashboard_role,
    grant_dashboard_role,
)
from agentdocket.dashboards.macros import expand  # noqa: E402
from agentdocket.dashboards.panels import run  # noqa: E402
from agentdocket.store import open_store  # noqa: E402
from agentdocket.store.config import parse_url, psycopg_conninfo  # noqa: E402
from agentdocket.store.migrate import upgrade  # noqa: E402
from agentdocket.store.months import month_of  # noqa: E402
from bench.common import fresh_database, postgres_url  # noqa: E402
from bench.synthesis import SYNTHESIS  # noqa: E402

TARGET_MS = 200.0
RUN_TARGET_MS = 50.0  # the run dashboard reads one run
ROLE = "agentdocket_bench_grafana"


def synthesise(url: str, runs: int, days: int, end: datetime) -> dict[str, int]:
    conn = psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)
    conn.execute("SET synchronous_commit = off")
    conn.execute("SET maintenance_work_mem = '512MB'")
    # the months' partitions (the store makes them as events come; here rows come in bulk)
    months = sorted({month_of(end - timedelta(days=d)) for d in range(days + 1)})
    conn.execute("SELECT agentdocket_ensure_partitions(%s::date[])", [months])
    for i, statement in enumerate(SYNTHESIS):
        start = time.perf_counter()
        sql = (
            statement.replace("{RUNS}", str(runs))
            .replace("{DAYS}", str(days))
            .replace("{END}", f"'{end.isoformat()}'")
        )
        with conn.transaction():
            conn.execute(sql.encode())
        print(
            f"  synthesis step {i + 1}/{len(SYNTHESIS)}: {time.perf_counter() - start:.1f} s",
            flush=True,
        )
    conn.execute("VACUUM ANALYZE")
    counts = {
        t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
        for t in ("runs", "events", "verdicts")
    }
    conn.close()
    return counts


def refreshed(url: str) -> str:
    with open_store(url, migrate=False) as store:
        done = store.projections.refresh_dashboards()
    return str(done)


def timed(conn: psycopg.Connection[Any], sql: str, rounds: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        n = len(conn.execute(sql.encode()).fetchall())
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--range-days", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="PostgreSQL server URL (default: the local cluster)")
    parser.add_argument(
        "--keep",
        metavar="NAME",
        help="synthesise into database NAME once and keep it; later runs with the same NAME "
        "re-time the panels on it (its derived views re-made at the current code)",
    )
    args = parser.parse_args()
    server = postgres_url(args.url)
    with bench_database(server, args.keep) as (url, seeded):
        try:
            modes, counts = measure(url, args, seeded)
        finally:
            with open_store(url, migrate=False) as store:
                assert store.roles.readers is not None  # PostgreSQL
                drop_dashboard_role(
                    store.roles.readers, ROLE
                )  # its rights in the database, then the role
    report(modes, counts, args)


@contextmanager
def bench_database(server: str, keep: str | None) -> Iterator[tuple[str, bool]]:
    """A fresh database dropped afterwards; or, with ``keep``, that database (made if absent)
    and whether it already holds the synthesis."""
    if keep is None:
        with fresh_database(server) as url:
            yield url, False
        return
    admin = psycopg_conninfo(parse_url(server))
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [keep]).fetchone()
        if not exists:
            conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(keep)))
    url = parse_url(server).set(database=keep).render_as_string(hide_password=False)
    seeded = False
    if exists:
        with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
            found = conn.execute("SELECT to_regclass('runs') IS NOT NULL").fetchone()
            seeded = bool(found and found[0]) and bool(
                conn.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchone()[0]  # type: ignore[index]
            )
    yield url, seeded


def measure(
    url: str, args: argparse.Namespace, seeded: bool
) -> tuple[list[list[tuple[str, str, float, int]]], dict[str, int]]:
    """The three states' panel times (fresh, recording, scored) on ``url``, synthesised first
    unless ``seeded``; and the row counts."""
    if seeded:  # a kept synthesis, migrated to this code's schema (as `agentdocket migrate`)
        upgrade(url, derived=dashboards.objects())
    open_store(url, derived=dashboards.objects()).close()  # the schema and the views
    if seeded:
        end = newest_start(url)
        print("re-using the kept synthesis", flush=True)
        counts = row_counts(url)
    else:
        end = datetime.now(UTC).replace(microsecond=0)
        print(f"synthesising {args.runs:,} runs over {args.days} days ...", flush=True)
        counts = synthesise(url, args.runs, args.days, end)
    print(
        f"  {counts['runs']:,} runs, {counts['events']:,} events, {counts['verdicts']:,} verdicts",
        flush=True,
    )
    print(f"  full refresh of the rollups: {refreshed(url)}", flush=True)
    window = (
        (end - timedelta(days=args.range_days)).isoformat().replace("+00:00", "Z"),
        end.isoformat().replace("+00:00", "Z"),
    )
    owner = psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True)
    owner.execute(  # what autovacuum would soon do
        "ANALYZE rollup_stale, rollup_runs, rollup_latency, rollup_verdicts, "
        "rollup_measures, rollup_transitions, rollup_experiments, rollup_costs"
    )
    # The panels run as Grafana runs them: as the role `agentdocket grafana-role` makes.
    password = uuid.uuid4().hex
    with open_store(url, migrate=False) as store:
        assert store.roles.readers is not None  # PostgreSQL
        grant_dashboard_role(store.roles.readers, ROLE, password)
    as_role = parse_url(url).set(username=ROLE, password=password)
    conn = psycopg.connect(psycopg_conninfo(as_role), autocommit=True)
    fresh = panel_times(conn, window, args.rounds)
    # While agents record, their runs keep the newest hour stale for run panels; verdict
    # panels go stale only when verdicts arrive and the runner has not yet refreshed (it does
    # right after scoring): the worst case, timed last.
    modes = [fresh]
    for kinds in (("runs",), ("runs", "verdicts")):
        owner.execute(
            "INSERT INTO rollup_stale (hour, what) SELECT agentdocket_hour(max(time)), "
            "w FROM dashboard_runs, unnest(%s::text[]) w GROUP BY w",
            [list(kinds)],
        )
        modes.append(panel_times(conn, window, args.rounds))
    conn.close()
    owner.close()
    print(f"  refresh of the newest hour: {refreshed(url)}", flush=True)
    return modes, counts


def newest_start(url: str) -> datetime:
    """The end of a kept synthesis' window: its newest run's start, to the second above."""
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        row = conn.execute("SELECT max(started_at) FROM runs").fetchone()
    assert row is not None and row[0] is not None
    newest: datetime = row[0]
    return newest.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)


def row_counts(url: str) -> dict[str, int]:
    with psycopg.connect(psycopg_conninfo(parse_url(url))) as conn:
        return {
            t: int(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0])  # type: ignore[index]
            for t in ("runs", "events", "verdicts")
        }


def report(
    modes: list[list[tuple[str, str, float, int]]],
    counts: dict[str, int],
    args: argparse.Namespace,
) -> None:
    """The table, beside the previous run's figures at the same size (kept in
    bench/.results/), and a summary line naming every panel over its target."""
    saved = ROOT / "bench" / ".results" / f"dashboards-{args.runs}.json"
    previous: dict[str, list[float]] = {}
    if saved.exists():
        previous = json.loads(saved.read_text())
    print(
        f"\nquery times in ms, median of {args.rounds}, last {args.range_days} of {args.days} "
        f"days, every variable at All ({counts['events']:,} events). Fresh: every hour rolled "
        "up. Recording: the newest hour's runs read live. Scored: its runs and verdicts read "
        "live (scored, not yet refreshed). Before: the previous run's (fresh/record/scored)."
    )
    print(f"  {'':16} {'':52} {'fresh':>8} {'record':>8} {'scored':>8}  {'before':>20}")
    over: list[str] = []
    now: dict[str, list[float]] = {}
    for row in zip(*modes, strict=True):
        dashboard, title, _, n = row[0]
        times = [ms for _, _, ms, _ in row]
        key = f"{dashboard}: {title}"
        now[key] = times
        late = max(times) >= target(dashboard, title)
        if late:
            over.append(key)
        before = "/".join(f"{ms:.0f}" for ms in previous.get(key, [])) or "-"
        cells = " ".join(f"{ms:8.1f}" for ms in times)
        flag = "  over target" if late else ""
        print(f"  {dashboard:16} {title[:52]:52} {cells}  {before:>20} {n:6} rows{flag}")
    saved.parent.mkdir(exist_ok=True)
    saved.write_text(json.dumps(now, indent=1))
    print(
        f"{len(now) - len(over)} of {len(now)} queries under their targets fresh, recording and "
        f"scored ({TARGET_MS:.0f} ms; the run dashboard's {RUN_TARGET_MS:.0f} ms but its list of "
        "runs)" + ("; over: " + "; ".join(over) if over else "")
    )


def target(dashboard: str, title: str) -> float:
    """The run dashboard reads one run: 50 ms; its list of failing runs, as every other
    panel: 200 ms."""
    if dashboard == run.UID.removeprefix("agentdocket-") and title != "Failing runs":
        return RUN_TARGET_MS
    return TARGET_MS


def panel_times(
    conn: psycopg.Connection[Any], window: tuple[str, str], rounds: int
) -> list[tuple[str, str, float, int]]:
    results: list[tuple[str, str, float, int]] = []
    values: dict[str, list[str]] = {}
    for name in ("agent", "dataset", "version"):
        sql = expand(panels.VARIABLE_SQL[name], {}, *window)
        ms, _ = timed(conn, sql, rounds)
        values[name] = sorted(str(r[0]) for r in conn.execute(sql.encode()).fetchall())
        results.append(("variables", name, ms, len(values[name])))
    values["scorer"] = ["planner.suffix_match"]
    sql = expand(panels.VARIABLE_SQL["version_a"], values, *window)
    ms, _ = timed(conn, sql, rounds)
    results.append(("variables", "version_a / version_b", ms, 2))
    values["version_a"], values["version_b"] = ["1"], ["1.1"]
    # the experiments dashboard: the first dataset and two of its selections
    sql = expand(panels.VARIABLE_SQL["experiment_dataset"], {}, *window)
    values["experiment_dataset"] = [min(str(r[0]) for r in conn.execute(sql.encode()).fetchall())]
    sql = expand(panels.VARIABLE_SQL["baseline"], values, *window)
    selections = sorted(str(r[0]) for r in conn.execute(sql.encode()).fetchall())
    values["baseline"], values["candidate"] = [selections[0]], [selections[-1]]
    # the run dashboard: the newest run that failed a scorer; the list unfiltered
    newest = "SELECT trace_id FROM dashboard_failing_runs ORDER BY time DESC LIMIT 1"
    values["trace_id"] = [str(conn.execute(newest).fetchall()[0][0])]
    for name in ("case_id", "failing_scorer", "failure_type", "tool", "session_id"):
        values[name] = [""]
    for spec in panels.PANELS:
        sql = expand(spec.sql, values, *window)
        ms, n = timed(conn, sql, rounds)
        results.append((spec.dashboard.removeprefix("agentdocket-"), spec.title, ms, n))
        print(f"  {results[-1][0]:16} {spec.title[:52]:52} {ms:8.1f} ms", flush=True)
    return results


if __name__ == "__main__":
    main()
