"""A huge trace end to end: one agent run of 50,000 spans (100,000 events) and one of 5,000,
sent to a real `agentdocket serve` as OTLP/JSON requests of 512 spans (what an SDK's
BatchSpanProcessor sends), on SQLite and PostgreSQL.

Prints, for each database: the time to receive and store each run (and the time per span of
the large against the small: 1.00x is linear); `runs show` of the large run (its summary) as
a command, against the same command on a run of ten spans measured in the same run (the cost
every `runs show` pays); a page of its steps; and `export traces` of each run: time, peak
traced memory (tracemalloc, in this process) and the peak resident memory of the command, with
the ratio of the large run's to the small one's (1.00x: memory bounded independently of the
trace's size), beside the peak of building the record whole (as export did before it
streamed).

    python bench/huge_trace.py [--postgres URL] [--spans 50000] [--small 5000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.importers.interchange_export import to_record, write_traces_jsonl
from agentdocket.store import open_store
from agentdocket.store.migrate import upgrade
from bench.common import fresh_database, postgres_url
from tests.helpers.huge_trace import huge_trace, requests
from tests.helpers.otlp_server import Server

# The command, telling at its exit its own peak resident memory (VmHWM: its process's, from
# its exec on; a parent's rusage would count this process's pages, which the child shares
# until it execs)
PEAK = (
    "import atexit, sys\n"
    "def peak():\n"
    "    status = open('/proc/self/status').read()\n"
    "    sys.stderr.write('VmHWM ' + status.split('VmHWM:')[1].split()[0] + '\\n')\n"
    "atexit.register(peak)\n"
    "from agentdocket.cli import main\n"
    "main()\n"
)


def send(url: str, spans: int, spool: Path) -> tuple[str, float]:
    """The run of ``spans`` spans sent to a new serve; its trace id and the seconds from the
    first request to the last span stored."""
    made, otlp = huge_trace(spans)
    bodies = list(requests(otlp))
    server = Server(url, spool).start()
    try:
        start = time.perf_counter()
        with httpx.Client(timeout=120) as client:
            for body in bodies:
                reply = client.post(
                    server.endpoint, content=body, headers={"content-type": "application/json"}
                )
                reply.raise_for_status()
        server.settled()
        took = time.perf_counter() - start
    finally:
        server.stop()
    return made.trace_id, took


def command(url: str, *args: str) -> tuple[float, int]:
    """Seconds and peak resident kilobytes of one command, in a process of its own."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "--database", url, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=True,
    )
    took = time.perf_counter() - start
    [kb] = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("VmHWM ")]
    return took, int(kb)


def traced(work: Callable[[], object]) -> tuple[float, int]:
    """Seconds and peak traced bytes of ``work``."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        work()
        return time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def export_all(url: str) -> None:
    """``export traces`` of the store (the run alone), streaming, to nowhere."""
    with open_store(url) as store, open(os.devnull, "wb") as out:
        write_traces_jsonl(store, out)


def whole(url: str, trace: str) -> None:
    """The run's record built whole, as export did before it streamed."""
    with open_store(url) as store:
        to_record(trace, store.reader.events(trace), None, None, None)


MB = 1024 * 1024


@contextmanager
def database(kind: str, postgres: str | None) -> Iterator[str]:
    """A new empty migrated database of ``kind``."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{tmp}/bench.db"
            upgrade(url)
            yield url
        return
    with fresh_database(postgres_url(postgres)) as url:
        upgrade(url)
        yield url


def one_run(kind: str, postgres: str | None, spans: int, *, show: bool) -> dict[str, float]:
    """The figures of one run of ``spans`` spans, alone in a database of its own."""
    with database(kind, postgres) as url, tempfile.TemporaryDirectory() as spool:
        trace, took = send(url, spans, Path(spool) / "big")
        out = {"receive": took}
        out["export_s"], out["peak"] = traced(lambda: export_all(url))
        out["cli_s"], out["rss"] = command(url, "export", "traces", "-o", os.devnull)
        out["whole"] = traced(lambda: whole(url, trace))[1]
        if show:
            tiny, _ = send(url, 10, Path(spool) / "tiny")
            out["base"] = min(command(url, "runs", "show", tiny)[0] for _ in range(3))
            out["show"] = min(command(url, "runs", "show", trace)[0] for _ in range(3))
            page = ("--page", "500")
            out["page"] = min(command(url, "runs", "show", trace, *page)[0] for _ in range(3))
    return out


def measure(kind: str, postgres: str | None, spans: int, small: int) -> None:
    s = one_run(kind, postgres, small, show=False)
    b = one_run(kind, postgres, spans, show=True)
    per = (b["receive"] / spans) / (s["receive"] / small)
    print(
        f"{kind:10s} receive+store: {small:,} spans {s['receive']:.1f} s, {spans:,} spans "
        f"{b['receive']:.1f} s ({spans / b['receive']:,.0f} spans/s; per span {per:.2f}x "
        "the small run's)"
    )
    print(
        f"{kind:10s} runs show, {spans:,} spans: summary {b['show']:.2f} s "
        f"({b['show'] / b['base']:.2f}x a 10-span run's {b['base']:.2f} s); "
        f"--page 500: {b['page']:.2f} s ({b['page'] / b['base']:.2f}x)"
    )
    print(
        f"{kind:10s} export traces, {spans:,} spans: {b['export_s']:.1f} s in process, "
        f"{b['cli_s']:.1f} s as a command ({small:,} spans: {s['cli_s']:.1f} s); peak traced "
        f"{b['peak'] / MB:.1f} MB ({b['peak'] / s['peak']:.2f}x the {small:,}-span run's "
        f"{s['peak'] / MB:.1f} MB); peak resident {b['rss'] / 1024:.0f} MB "
        f"({b['rss'] / s['rss']:.2f}x {s['rss'] / 1024:.0f} MB); the record built whole "
        f"(before): {b['whole'] / MB:.0f} MB ({b['whole'] / s['whole']:.2f}x "
        f"{s['whole'] / MB:.0f} MB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: scripts/pg-up)")
    parser.add_argument("--spans", type=int, default=50_000)
    parser.add_argument("--small", type=int, default=5_000)
    parser.add_argument("--only", choices=["sqlite", "postgresql"])
    args = parser.parse_args()
    for kind in ("sqlite", "postgresql"):
        if args.only in (None, kind):
            measure(kind, args.postgres, args.spans, args.small)


if __name__ == "__main__":
    main()
