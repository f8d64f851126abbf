"""Appending on a Citus cluster against one PostgreSQL server, in one run: what a batch costs
the cluster, which ``bench/scale.py --citus`` measures among much else (and in tens of minutes).

    python bench/citus_append.py [--events 40000] [--rounds 2] [--batch 1000] [--url PG]
                                 [--citus-url CITUS]

Each round appends the same ``--events`` synthetic events (bench/ingest.py's) through
``Store.append`` in batches of ``--batch`` (1,000) into a fresh migrated database on each side:
the first half timed, then one batch sent again (every event already stored: the path a retried
request takes), then the second half. It prints events/s on each side and the cluster's cost per
event over the single server's (above 1: the cluster is dearer), round by round and as the
median, and the CPU time per appended event of each server (the single one, the coordinator,
each worker; read from /proc, so the servers must run on this machine) and of the client's
Python: the figures docs/citus.md sizes a cluster from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from click.testing import CliRunner

from agentdocket.cli import main as cli
from agentdocket.events import Event
from agentdocket.store import open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from bench.citus import Cluster, ServerCpu, citus_database, equal_commits
from bench.common import fresh_database, postgres_url
from bench.ingest import synthetic_events

BATCH = 1000


def appended(
    url: str,
    events: list[Event],
    meters: dict[str, ServerCpu],
    cpu: dict[str, list[float]],
    batch: int = BATCH,
) -> tuple[float, float]:
    """Events/s of the first half, and the milliseconds of one batch sent again; the CPU
    microseconds per event of each server in ``meters`` and of this process (the client's
    Python) over the first half are added to ``cpu``."""
    result = CliRunner().invoke(cli, ["--database", url, "migrate"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    half = len(events) // 2
    with open_store(url) as store:
        before = {name: m.seconds() for name, m in meters.items()}
        client = time.process_time()
        start = time.perf_counter()
        first = store.append(events[:half], batch_size=batch)
        rate = first.inserted / (time.perf_counter() - start)
        for name, m in meters.items():
            cpu.setdefault(name, []).append((m.seconds() - before[name]) / half * 1e6)
        cpu.setdefault(f"client ({next(iter(meters))})", []).append(
            (time.process_time() - client) / half * 1e6
        )
        start = time.perf_counter()
        again = store.append(events[:batch], batch_size=batch)
        resent_ms = (time.perf_counter() - start) * 1000
        assert first.inserted == half and again.inserted == 0, (first, again)
        store.append(events[half:], batch_size=batch)
    return rate, resent_ms


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=BATCH, help="events per Store.append batch")
    parser.add_argument("--url", help="the PostgreSQL server (default: scripts/pg-up's)")
    parser.add_argument(
        "--citus-url",
        default=os.environ.get("AGENTDOCKET_TEST_CITUS_URL"),
        help="the Citus coordinator (default: $AGENTDOCKET_TEST_CITUS_URL, scripts/citus-up's)",
    )
    args = parser.parse_args()
    if not args.citus_url:
        parser.error("no Citus cluster: give --citus-url (scripts/citus-up prints it)")
    equal_commits()
    events = list(synthetic_events(args.events, seed=11))
    server = postgres_url(args.url)
    single_meter = {"one server": ServerCpu(psycopg_conninfo(parse_url(server)))}
    nodes = Cluster.of(args.citus_url)
    cluster_meters = {
        ("coordinator" if i == 0 else f"worker {i}"): ServerCpu(nodes.conninfo(port))
        for i, port in enumerate(nodes.ports)
    }
    ratios: list[float] = []
    cpu: dict[str, list[float]] = {}
    for i in range(args.rounds):
        with fresh_database(server) as url:
            single, single_again = appended(url, events, single_meter, cpu, args.batch)
        with citus_database(args.citus_url) as url:
            cluster, cluster_again = appended(url, events, cluster_meters, cpu, args.batch)
        ratios.append(single / cluster)
        print(
            f"round {i + 1}: one server {single:,.0f} events/s, the cluster {cluster:,.0f} "
            f"events/s: {single / cluster:.2f}x the cost per event; a batch sent again "
            f"{single_again:.0f} ms and {cluster_again:.0f} ms",
            flush=True,
        )
    print(f"median: the cluster costs {statistics.median(ratios):.2f}x per event appended")
    print("CPU per event appended, microseconds (median of the rounds):")
    for name, values in cpu.items():
        print(f"  {name:24} {statistics.median(values):8.1f}")


if __name__ == "__main__":
    main()
