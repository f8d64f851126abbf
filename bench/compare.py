"""Comparison benchmark: ``compare`` over many cases and scorers, in memory.

    python bench/compare.py [--cases 100000] [--scorers 5]

Two sides of ``--cases`` cases, one run each; ``--scorers`` scorers, three of them pass/fail
(McNemar) and the rest scores (signed rank), every run judged by each. It times the whole
comparison (pairing, tests, the intervals that invert them, Holm, the power sentences, the
lists of changed cases without trajectories, which read the store) and, as the baseline of the
same run, the pairing alone: per-case outcomes, values and their differences, which any
comparison must compute.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.experiments.compare import Judged, Side, compare
from agentdocket.experiments.pairing import pair


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--scorers", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    n = args.cases
    baseline = Side("A", {f"c{i}": [f"a{i}"] for i in range(n)})
    candidate = Side("B", {f"c{i}": [f"b{i}"] for i in range(n)})
    verdicts: dict[str, dict[str, Judged]] = {}
    for s in range(args.scorers):
        judged: dict[str, Judged] = {}
        chance = rng.uniform(0.2, 0.9, size=n)
        a, b = rng.random(n) < chance, rng.random(n) < chance + 0.01
        sa, sb = rng.normal(0.6, 0.1, size=n), rng.normal(0.605, 0.1, size=n)
        for i in range(n):
            if s < 3:
                judged[f"a{i}"] = Judged(bool(a[i]), None, None if a[i] else "x:fail")
                judged[f"b{i}"] = Judged(bool(b[i]), None, None if b[i] else "x:fail")
            else:
                judged[f"a{i}"] = Judged(None, float(sa[i]))
                judged[f"b{i}"] = Judged(None, float(sb[i]))
        verdicts[f"scorer.{s}"] = judged
    start = time.perf_counter()
    for name, judged in verdicts.items():
        pair(name, baseline, candidate, judged)
    pairing = time.perf_counter() - start
    start = time.perf_counter()
    result = compare(baseline, candidate, verdicts)
    total = time.perf_counter() - start
    print(f"compare: {n:,} cases x {args.scorers} scorers")
    print(f"  whole comparison      {total:8.2f} s")
    print(f"  baseline: pairing     {pairing:8.2f} s")
    print(f"  ratio whole / pairing {total / pairing:8.2f}x")
    for name, s in result["scorers"].items():
        print(f"  {name}: {s['test']} p={s['p_value']:.3g} verdict {s['verdict']}")


if __name__ == "__main__":
    main()
