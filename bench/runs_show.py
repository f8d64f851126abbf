"""`agentdocket runs show` of a huge trace: one run of 5,000 tool spans (10,001 events), as
the chaos run sent it, on SQLite and PostgreSQL.

Prints the command's wall time with the default page of steps, and the ratio to a baseline
measured in the same run: the same command on a run of ten spans (the cost every `runs show`
pays: starting the interpreter, opening the store). The target: under a second, and the huge
run within a small factor of the small one.

    python bench/runs_show.py [--postgres URL] [--spans 5000]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.store import open_store
from agentdocket.store.migrate import upgrade
from bench.common import fresh_database, postgres_url
from tests.helpers.factory import nested_run

CLI = [sys.executable, "-c", "from agentdocket.cli import main; main()"]


def timed(url: str, trace: str, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [*CLI, "--database", url, "runs", "show", trace, *args], check=True, capture_output=True
    )
    return time.perf_counter() - start


def measure(url: str, spans: int) -> None:
    rng = random.Random(5)
    huge, small = nested_run(rng, spans), nested_run(rng, 10)
    with open_store(url) as store:
        store.append(huge + small)
    base = min(timed(url, small[0].trace_id) for _ in range(3))
    paged = min(timed(url, huge[0].trace_id) for _ in range(3))
    everything = timed(url, huge[0].trace_id, "--steps", "0")
    dialect = url.split(":", 1)[0].split("+")[0]
    print(
        f"{dialect:10s} runs show, {len(huge):,} events: {paged:.2f} s "
        f"({paged / base:.2f}x a 10-span run's {base:.2f} s); every step (--steps 0): "
        f"{everything:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL server URL (default: scripts/pg-up)")
    parser.add_argument("--spans", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        upgrade(url)
        measure(url, args.spans)
    with fresh_database(postgres_url(args.postgres)) as url:
        upgrade(url)
        measure(url, args.spans)


if __name__ == "__main__":
    main()
