"""What ``bench/scale.py --citus`` needs of the cluster of scripts/citus-up: a database of its
own, and a report of what each worker holds and how far plans fan out."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import psycopg

from agentdocket.store.config import parse_url, psycopg_conninfo
from tests.helpers.citus import Cluster


@contextmanager
def citus_database(server: str) -> Iterator[str]:
    """A new database on the Citus cluster (every node, workers registered), dropped after."""
    cluster = Cluster.of(server)
    name = f"agentdocket_bench_{uuid.uuid4().hex[:8]}"
    try:
        yield cluster.make_database(name)
    finally:
        cluster.drop_database(name)


def tasks(conn: psycopg.Connection[Any], sql: str) -> str:
    """How many tasks (shards) Citus's plan of ``sql`` sends work to."""
    plan = "\n".join(r[0] for r in conn.execute(f"EXPLAIN {sql}".encode()).fetchall())
    counts = re.findall(r"Task Count: (\d+)", plan)
    return "+".join(counts) if counts else "0 (coordinator)"


def cluster_report(url: str, end: datetime) -> None:
    """What each worker holds of the log, and how far a few plans fan out."""
    with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
        held = conn.execute(
            "SELECT nodeport, count(*), sum(shard_size) FROM citus_shards "
            "WHERE table_name::text LIKE 'events%' GROUP BY nodeport ORDER BY nodeport"
        ).fetchall()
        for port, shards, size in held:
            mb = float(size) / 1e6
            print(f"[citus] worker :{port} holds {shards} shards of the log, {mb:.0f} MB")
        [(trace,)] = conn.execute("SELECT trace_id FROM runs LIMIT 1").fetchall()
        since = (end - timedelta(days=1)).isoformat()
        plans = {
            "read one run by trace id": f"SELECT * FROM runs WHERE trace_id = '{trace}' "
            "AND run_month = (SELECT run_month FROM trace_months "
            f"WHERE trace_id = '{trace}')",
            "runs of the last day (scoring)": "SELECT trace_id FROM runs "
            f"WHERE started_at >= '{since}'",
            "runs per hour, last day": "SELECT date_trunc('hour', started_at), count(*) "
            f"FROM runs WHERE started_at >= '{since}' GROUP BY 1",
        }
        for label, sql in plans.items():
            print(f"[citus] tasks of {label}: {tasks(conn, sql)}")


TICK = os.sysconf("SC_CLK_TCK")


def equal_commits() -> None:
    """Commit alike on both sides: scripts/citus-up's servers run with ``synchronous_commit``
    (and ``fsync``) off, being test servers, and scripts/pg-up's with both on; every session
    this process opens from now on, on either side, commits without waiting for the disk
    (``fsync`` is the server's alone: the single server still flushes at checkpoints)."""
    os.environ["PGOPTIONS"] = f"{os.environ.get('PGOPTIONS', '')} -c synchronous_commit=off"


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # the fields after the command's name


class ServerCpu:
    """The CPU seconds a PostgreSQL server (its postmaster and every process it started, the
    ones that ended included) has used, read from /proc on this machine."""

    def __init__(self, conninfo: str) -> None:
        with psycopg.connect(conninfo) as conn:  # read while the backend lives
            [(backend,)] = conn.execute("SELECT pg_backend_pid()").fetchall()
            self.postmaster = int(_stat(int(backend))[1])  # a backend's parent

    def seconds(self) -> float:
        # fields (after the name, from 0): 1 ppid, 11 utime, 12 stime, 13 cutime, 14 cstime
        own = _stat(self.postmaster)
        ticks = sum(int(own[i]) for i in (11, 12, 13, 14))  # reaped children in cutime/cstime
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                fields = _stat(int(name))
            except OSError:  # ended meanwhile: its time is in the postmaster's now
                continue
            if int(fields[1]) == self.postmaster:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / TICK


def servers_cpu(conninfos: dict[str, str]) -> dict[str, ServerCpu]:
    """Each named server's CPU meter."""
    return {name: ServerCpu(info) for name, info in conninfos.items()}
