"""Before and after, in one run: a benchmark of this checkout against the same benchmark of an
earlier commit, alternating, on the same server.

    python bench/before_after.py BASE_REF [--rounds 2] [--only ingest,scoring,receiver]

A throwaway worktree of ``BASE_REF`` is made (and removed afterwards); each benchmark runs from
that tree and from this one in turn, ``--rounds`` times, with the arguments below (smaller than
each benchmark's defaults, so the whole comparison takes minutes). Each benchmark prints its own
ratio against a baseline it measures in the same process (raw COPY, the scorers' bare loop,
...), which takes most of the machine's noise out; this prints those lines side by side.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = {
    "ingest": ["--events", "100000", "--rounds", "3"],
    "scoring": ["--traces", "20000", "--similarity-traces", "300", "--rouge-pairs", "300"],
    "receiver": ["--spans", "20000", "--peers", "none"],
}
# the lines worth comparing: a rate or a ratio
FIGURE = re.compile(r"(events/s|traces/s|spans/s|runs/s|steps/s|ratio|[0-9.]+x\b)")


def run(tree: Path, name: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, str(tree / "bench" / f"{name}.py"), *RUNS[name]],
        check=True,
        text=True,
        capture_output=True,
        cwd=tree,  # and on the path first: the servers it starts import that tree's code
        env={**os.environ, "PYTHONPATH": str(tree)},
    ).stdout
    return [line.rstrip() for line in out.splitlines() if FIGURE.search(line)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("base", help="the earlier commit (any git ref)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", default=",".join(RUNS), help="benchmarks, comma-separated")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        check=True,
        text=True,
        capture_output=True,
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.base],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            for name in names:
                for round_ in range(1, args.rounds + 1):
                    for label, tree in ((f"before ({args.base})", base), (f"after ({head})", ROOT)):
                        print(f"== {name}, round {round_}, {label}", flush=True)
                        for line in run(tree, name):
                            print(f"   {line}", flush=True)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False
            )


if __name__ == "__main__":
    main()
