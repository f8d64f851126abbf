"""Start-up benchmark: how long the command line takes before it does anything.

    python bench/startup.py [--rounds 15]

Each command is started ``--rounds`` times as a user starts it (a new process, the installed
console script) and its median wall time printed beside the baseline measured in the same run:
a bare ``python -c "import click"``, the least any click program costs. Commands: ``agentdocket
--help`` (every command module imported, to list them), ``agentdocket runs list`` and
``agentdocket feedback add`` on a small store (the sample traces: 6 runs), and ``agentdocket
report`` on it. Targets: ``--help`` within 3x the baseline; ``runs list`` under 0.5 s.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTDOCKET = str(Path(sys.executable).parent / "agentdocket")
SAMPLE = ROOT / "agentdocket" / "data" / "sample_traces.jsonl"


def _median(command: list[str], rounds: int, cwd: Path) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        subprocess.run(
            [AGENTDOCKET, "import", "traces", str(SAMPLE)], cwd=cwd, check=True, capture_output=True
        )
        first = subprocess.run(
            [AGENTDOCKET, "runs", "list", "--format", "json"],
            cwd=cwd,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split('"trace_id": "')[1][:8]
        baseline = _median([sys.executable, "-c", "import click"], args.rounds, cwd)
        print(f"baseline: python -c 'import click'   {baseline:6.3f} s")
        for name, command, target in (
            ("agentdocket --help", [AGENTDOCKET, "--help"], "3x"),
            ("agentdocket runs list", [AGENTDOCKET, "runs", "list"], "0.5 s"),
            (
                "agentdocket feedback add",
                [
                    AGENTDOCKET,
                    "feedback",
                    "add",
                    first,
                    "--rubric",
                    "thumbs",
                    "--value",
                    "up",
                    "--author",
                    "ana",
                ],
                "",
            ),
            ("agentdocket report", [AGENTDOCKET, "report"], ""),
        ):
            took = _median(command, args.rounds, cwd)
            print(
                f"{name:32} {took:6.3f} s  {took / baseline:5.1f}x the baseline"
                + (f"  (target {target})" if target else "")
            )


if __name__ == "__main__":
    main()
