"""The gate's policy table in docs/experiments.md, by simulation: for n cases and k repeats, how
often `compare` fails an identical candidate, and how often it misses a 10- and a 20-point
drop, under the default policy (fail on worse) and with --fail-on-inconclusive.

    python scripts/gate_simulation.py [--sims 1000] [--cases 6,20,100] [--repeats 1,3,5]

Each case's chance of passing is drawn from a beta distribution of mean 0.7 and concentration 2
(cases of every difficulty, some that always pass or always fail); the baseline and an identical
candidate run on those chances, a worse candidate on each chance scaled down by drop / 0.7 (the
model `experiment plan` uses). One pass/fail scorer gates. Each cell has a seed of its own, so
any cell can be computed again alone (the tests do, for the first row).
"""

from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.experiments.compare import Judged, Side, compare

MEAN, CONCENTRATION = 0.7, 2.0
DROPS = (0.0, 0.1, 0.2)


def cell(cases: int, repeats: int, drop: float, sims: int) -> dict[str, float]:
    """The shares of ``sims`` comparisons whose gate is worse and inconclusive."""
    rng = np.random.default_rng(zlib.crc32(f"{cases}/{repeats}/{drop}".encode()))
    ids = [f"c{i}" for i in range(cases)]
    sides = [Side(s, {c: [f"{s}{c}.{r}" for r in range(repeats)] for c in ids}) for s in "AB"]
    worse = inconclusive = 0
    for _ in range(sims):
        chance = rng.beta(MEAN * CONCENTRATION, (1 - MEAN) * CONCENTRATION, size=cases)
        judged: dict[str, Judged] = {}
        for side, scale in (("A", 1.0), ("B", 1 - drop / MEAN)):
            passed = rng.random((cases, repeats)) < (chance * scale)[:, None]
            for i, c in enumerate(ids):
                for r in range(repeats):
                    judged[f"{side}{c}.{r}"] = Judged(bool(passed[i, r]), None)
        outcome = compare(sides[0], sides[1], {"pass_fail": judged})["outcome"]
        worse += outcome == "worse"
        inconclusive += outcome == "inconclusive"
    return {"worse": worse / sims, "inconclusive": inconclusive / sims}


def row(cases: int, repeats: int, sims: int) -> list[str]:
    """One line of the table: the identical candidate failed, then each drop missed, by policy."""
    found = [cell(cases, repeats, drop, sims) for drop in DROPS]
    same, *drops = found
    out = [str(cases), str(repeats)]
    out.append(f"{same['worse']:.1%} / {same['worse'] + same['inconclusive']:.1%}")
    for d in drops:
        missed = 1 - d["worse"]
        missed_strict = 1 - d["worse"] - d["inconclusive"]
        out.append(f"{missed:.1%} / {missed_strict:.1%}")
    return out


HEADER = [
    "cases",
    "repeats",
    "identical candidate failed",
    "10-point drop missed",
    "20-point drop missed",
]


def table(cases: list[int], repeats: list[int], sims: int) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    for n in cases:
        for k in repeats:
            lines.append("| " + " | ".join(row(n, k, sims)) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--cases", default="6,20,100")
    parser.add_argument("--repeats", default="1,3,5")
    args = parser.parse_args()
    print(
        table(
            [int(x) for x in args.cases.split(",")],
            [int(x) for x in args.repeats.split(",")],
            args.sims,
        )
    )


if __name__ == "__main__":
    main()
