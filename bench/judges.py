"""Judge throughput through the local model: ``answer.reference`` on the demo's 30 runs, judged
by ``local:smollm2``, with one and with two worker processes, against a second pass served
from the judge-call cache (the baseline, measured in the same run).

    python bench/judges.py [--workers 1,2] [--batch-size 15] [--postgres [URL]]

For each worker count, a fresh database (SQLite in a temporary folder, or one made on the
PostgreSQL server) gets the demo, then

    agentdocket score --dataset concerts-demo --scorer answer.reference --judge local:smollm2
        --workers N --batch-size 15

runs as a new process, timed whole: starting, every worker process loading the model (printed
apart, measured in a process of its own), the calls, the verdicts written. Then, on the first
database, the same scorer under another version (``--config max_concurrency=4``: its calls
have the same cache keys) judges the same runs again, every call served from the cache: the
baseline. Printed: verdicts per second, calls made, unparseable verdicts, each pass's time and
its ratio to the cached pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.store import open_store
from bench.common import fresh_database, postgres_url

AGENTDOCKET = str(Path(sys.executable).with_name("agentdocket"))
SCORE = ["score", "--dataset", "concerts-demo", "--scorer", "answer.reference"]
JUDGE = "local:smollm2"


@contextmanager
def database(postgres: str | None) -> Iterator[str]:
    """A fresh, empty database: on the PostgreSQL server at ``postgres``, else SQLite."""
    if postgres is not None:
        with fresh_database(postgres) as url:
            yield url
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / 'bench.db'}"


def run(url: str, *args: str) -> tuple[float, str]:
    """``agentdocket --database URL ARGS`` in a new process: its seconds and output."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    out = subprocess.run(
        [AGENTDOCKET, "--database", url, *args], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"agentdocket {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")
    return seconds, out.stdout


def judge_calls(url: str) -> int:
    with open_store(url) as store:
        return int(store.reader.counts()["judge_calls"])


def unparseable(url: str, version: str) -> int:
    """The verdicts of answer.reference ``version`` whose judge never stated one."""
    _, out = run(url, "report", "--format", "json", "--version", f"answer.reference={version}")
    return int(json.loads(out)["scorers"]["answer.reference"]["unparseable"])


def load_seconds() -> float:
    """The model's load in a process of its own (each worker process pays it)."""
    code = (
        "import time; t = time.perf_counter()\n"
        "from agentdocket.scorers.judges.local import loaded; loaded('smollm2')\n"
        "print(time.perf_counter() - t)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--batch-size", type=int, default=15, help="runs per batch (30 runs)")
    parser.add_argument(
        "--postgres", nargs="?", const="", default=None, help="PostgreSQL (default: SQLite)"
    )
    args = parser.parse_args()
    server = None if args.postgres is None else postgres_url(args.postgres or None)
    print(f"model load in a process of its own: {load_seconds():.1f} s", flush=True)
    rows: list[tuple[str, float, int, int, int]] = []  # pass, seconds, verdicts, calls, bad
    cached: tuple[float, int, int, int] | None = None
    for workers in (int(w) for w in args.workers.split(",")):
        with database(server) as url:
            run(url, "demo")
            before = judge_calls(url)
            seconds, out = run(
                url,
                *SCORE,
                "--judge",
                JUDGE,
                "--workers",
                str(workers),
                "--batch-size",
                str(args.batch_size),
                "--format",
                "json",
            )
            verdicts = sum(t["added"] for t in json.loads(out)["scorers"])
            calls = judge_calls(url) - before
            rows.append((f"{workers} worker(s)", seconds, verdicts, calls, unparseable(url, "1")))
            print(rows[-1], flush=True)
            if cached is None:
                before = judge_calls(url)
                again, out = run(
                    url, *SCORE, "--judge", JUDGE, "--config", "max_concurrency=4",
                    "--format", "json",
                )  # fmt: skip
                added = sum(t["added"] for t in json.loads(out)["scorers"])
                bad = unparseable(url, "1+max_concurrency=4")
                cached = (again, added, judge_calls(url) - before, bad)
    assert cached is not None
    rows.append(("from the cache (baseline)", *cached))
    print()
    print("| pass | seconds | verdicts | verdicts / s | calls made | unparseable | vs cached |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, seconds, verdicts, calls, bad in rows:
        print(
            f"| {name} | {seconds:.1f} | {verdicts} | {verdicts / seconds:.2f} | {calls} "
            f"| {bad} | {seconds / cached[0]:.1f}x |"
        )


if __name__ == "__main__":
    main()
