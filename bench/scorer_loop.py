"""The rule scorers' per-trace work without a database: microseconds per trace of each part.

    python bench/scorer_loop.py [--traces 50000] [--repeat 3]

Over bench/scoring.py's synthetic traces (built once, each holding only the kinds the scorer
reads, with its case, as the runner reads them), in batches of 2000 as the runner scores them:
``input_hash``, the scorer's outcomes, ``to_verdict`` and ``verdict_event``. The best of
``--repeat`` passes is shown. Reading and writing are bench/scoring.py's.

The traces built are frozen out of the garbage collector's sight (``gc.freeze``): the runner
holds one batch at a time, and collections that walk 50,000 traces would time the collector,
not the scorers.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket import scorers
from agentdocket.events import Event, Trace
from agentdocket.scorers import Scorer, shared_outcomes
from agentdocket.scorers.runner import verdict_event
from bench.scoring import RULE_BASED, cases, traces

BATCH = 2000
TS = datetime(2026, 1, 1, tzinfo=UTC)


def build(n: int, scorer: Scorer) -> list[list[Trace]]:
    """``n`` synthetic traces in batches, as the runner would read them for ``scorer``."""
    known = {c.case_id: c for c in cases(300)}
    kinds = scorer.event_kinds
    out: list[Trace] = []
    for tid, group in groupby(traces(n, list(known.values())), key=lambda e: e.trace_id):
        events: list[Event] = list(group)
        case = known[events[0].payload["case_id"]]
        out.append(Trace.partial(tid, [e for e in events if e.kind in kinds], case))
    return [out[i : i + BATCH] for i in range(0, len(out), BATCH)]


def once(scorer: Scorer, batches: list[list[Trace]]) -> dict[str, float]:
    """Seconds of each part over the batches, one batch's results alive at a time."""
    spent = dict.fromkeys(("input_hash", "score", "to_verdict", "verdict_event"), 0.0)
    for batch in batches:
        t0 = time.perf_counter()
        hashes = [scorer.input_hash(t) for t in batch]
        t1 = time.perf_counter()
        with shared_outcomes():
            outcomes = scorer.outcomes(batch)
        t2 = time.perf_counter()
        verdicts = [
            scorer.to_verdict(t, o, h)
            for t, o, h in zip(batch, outcomes, hashes, strict=True)
            if o is not None
        ]
        t3 = time.perf_counter()
        events = [verdict_event(v, TS) for v in verdicts]
        t4 = time.perf_counter()
        del events, verdicts, outcomes, hashes
        for part, seconds in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            spent[part] += seconds
    return spent


def measure(scorer: Scorer, batches: list[list[Trace]], repeat: int) -> dict[str, float]:
    """Seconds of each part over all the batches (best of ``repeat``)."""
    runs = [once(scorer, batches) for _ in range(repeat)]
    return {part: min(r[part] for r in runs) for part in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scorers", default=",".join(RULE_BASED))
    args = parser.parse_args()
    parts = ("input_hash", "score", "to_verdict", "verdict_event")
    print(f"us per trace over {args.traces:,} synthetic traces (best of {args.repeat})")
    print(f"{'scorer':22} " + " ".join(f"{p:>13}" for p in parts) + f" {'total':>8}")
    for name in args.scorers.split(","):
        scorer = scorers.get(name)
        batches = build(args.traces, scorer)
        gc.collect()
        gc.freeze()
        seconds = measure(scorer, batches, args.repeat)
        del batches
        gc.unfreeze()
        us = {p: seconds[p] / args.traces * 1e6 for p in parts}
        cells = " ".join(f"{us[p]:>13.1f}" for p in parts)
        print(f"{name:22} {cells} {sum(us.values()):>8.1f}")


if __name__ == "__main__":
    main()
