"""Scoring benchmark: scorers end to end over synthetic traces stored in PostgreSQL, and ROUGE-L.

    python bench/scoring.py [--traces 100000] [--workers 1,2] [--similarity-traces 2000]
                            [--rouge-pairs 1000] [--url postgresql+psycopg://...]

1. Rule-based scorers, end to end: read the traces (only the kinds each scorer reads, with their
   cases), score, append the verdict events (and the verdicts projection), through
   ``agentdocket.scorers.runner.score_runs``. Baseline, measured in the same run on the same
   server: psycopg reading the same event rows raw (COPY TO, no decoding), plus a binary COPY of
   as many verdict-sized rows into a bare table. The ratio says how far the whole runner is
   from the cost of just moving the bytes.
2. ``response.similarity`` on fewer traces (embedding is the cost): the runner, cold cache,
   against the bare model's batched ``encode`` of exactly the texts the runner had to embed.
3. ROUGE-L on 60-word texts: ours against ``rouge_score`` (values must be identical).

Uses a throwaway database, created and dropped here.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket import scorers
from agentdocket.events import (
    Case,
    Dataset,
    Event,
    ExpectedCall,
    Plan,
    PlanStep,
    Response,
    RunFinished,
    RunStarted,
    ToolCalled,
    ToolReturned,
)
from agentdocket.scorers import Scorer
from agentdocket.scorers.runner import score_runs
from agentdocket.store import Store, open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from bench.common import fresh_database, postgres_url

RULE_BASED = ("planner.suffix_match", "tools.slot_fill", "tools.procedural", "interaction.metrics")
WORDS = [f"w{i}" for i in range(2000)] + ["the", "a", "of", "is", "and", "to", "in"]


def cases(n: int) -> list[Case]:
    out = []
    for i in range(n):
        tools = [f"tool_{j}" for j in range(i % 3 + 1)]
        out.append(
            Case(
                case_id=f"c{i}",
                question=f"question {i}",
                expected_plan=tools,
                expected_calls=[ExpectedCall(t, {"q": f"v{i}", "n": i}) for t in tools],
                stub_response=f"the answer to question {i} is {i * 7} and nothing else",
            )
        )
    return out


def traces(n: int, known: list[Case], seed: int = 0) -> Iterator[Event]:
    """Runs of 6-10 events: a plan (sometimes with an extra step, sometimes reversed), a call
    per expected call (sometimes with a wrong argument), a response (the stub half the time)."""
    rng = random.Random(seed)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for k in range(n):
        case = known[k % len(known)]
        tid = uuid.UUID(int=rng.getrandbits(128)).hex
        root = tid[:16]
        ts = t0 + timedelta(seconds=k)
        made: list[Event] = []

        def add(
            payload: object,
            span: str = root,
            made: list[Event] = made,
            tid: str = tid,
            root: str = root,
            ts: datetime = ts,
        ) -> None:
            made.append(
                Event.create(
                    trace_id=tid,
                    span_id=span,
                    parent_span_id=None if span == root else root,
                    seq=len(made),
                    ts=ts + timedelta(milliseconds=len(made)),
                    payload=payload,
                )
            )

        add(RunStarted(agent="bench", dataset="bench", dataset_version="1", case_id=case.case_id))
        plan = list(case.expected_plan)
        if rng.random() < 0.2:
            plan = ["lookup", *plan]
        if rng.random() < 0.1:
            plan.reverse()
        add(Plan(steps=[PlanStep(tool=t) for t in plan]))
        for j, expected in enumerate(case.expected_calls):
            span = f"{j + 1:016x}"
            arguments = dict(expected.arguments) if isinstance(expected.arguments, dict) else {}
            if rng.random() < 0.15:
                arguments["q"] = "wrong"
            add(ToolCalled(call_id=span, tool=expected.tool, arguments=arguments), span)
            add(ToolReturned(call_id=span, tool=expected.tool, result={"rows": j}), span)
        stub = case.stub_response or ""
        words = " ".join(rng.choice(WORDS) for _ in range(12))
        add(Response(text=stub if rng.random() < 0.5 else f"I believe {words}"))
        add(RunFinished(status="ok"))
        yield from made


def fresh_version(name: str) -> Scorer:
    """The registered scorer under a new version, so that every timed pass writes verdicts."""
    base = scorers.get(name)
    return scorers.register(
        Scorer(
            base.name,
            f"bench-{uuid.uuid4().hex[:8]}",
            base.description,
            base.fn,
            base.config,
            base.inputs,
            base.batch,
            base.metrics,
        )
    )


def maintenance(url: str, statement: str) -> None:
    """VACUUM or CHECKPOINT between timed parts, so that each starts from the same state."""
    with psycopg.connect(psycopg_conninfo(parse_url(url)), autocommit=True) as conn:
        conn.execute(statement)


def baseline_seconds(url: str, kinds: frozenset[str], n_verdicts: int) -> float:
    """Raw psycopg: COPY the input event rows out, COPY as many verdict-sized rows in."""
    conninfo = psycopg_conninfo(parse_url(url))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE bare_verdicts (trace_id text, span_id text, payload jsonb)")
        started = time.perf_counter()
        query = (
            "COPY (SELECT e.* FROM events e JOIN runs r ON r.trace_id = e.trace_id "
            f"WHERE r.dataset = 'bench' AND e.kind IN ({', '.join(repr(k) for k in kinds)})) "
            "TO STDOUT"
        )
        with conn.cursor().copy(query) as copy:
            for _ in copy:
                pass
        payload = (
            '{"scorer": "planner.suffix_match", "scorer_version": "1", "input_hash": "'
            + "ab" * 32
            + '", "passed": true, "score": 1.0, "details": {"extra_steps": 0}}'
        )
        with conn.cursor().copy(
            "COPY bare_verdicts (trace_id, span_id, payload) FROM STDIN"
        ) as copy:
            for i in range(n_verdicts):
                copy.write_row((f"{i:032x}", f"{i:016x}", payload))
        return time.perf_counter() - started


def rule_based(store: Store, url: str, n: int, workers: list[int]) -> None:
    print(f"\n1. rule-based scorers, end to end over {n:,} traces in PostgreSQL (target >= 20k/s)")
    print(f"   {'scorer':22} {'workers':>7} {'traces/s':>10} {'raw floor/s':>12} {'ratio':>6}")
    for name in RULE_BASED:
        kinds = scorers.get(name).event_kinds
        floor = n / baseline_seconds(url, kinds, n)
        for w in workers:
            scorer = fresh_version(name)
            maintenance(url, "CHECKPOINT")
            # Scoring alone: the dashboards' refresh after it is timed by bench/dashboards.py.
            result = score_runs(
                store, [scorer], dataset="bench", workers=w, refresh_dashboards=False
            )
            assert result.tallies[(scorer.name, scorer.version)].added == n, result
            rate = n / result.seconds
            print(f"   {name:22} {w:>7} {rate:>10,.0f} {floor:>12,.0f} {floor / rate:>5.1f}x")


def similarity(store: Store, n: int) -> None:
    from agentdocket.scorers import embeddings

    print(f"\n2. response.similarity over {n:,} traces (target: within 1.2x of bare encode)")
    model = embeddings.model()  # loading the model is not timed, nor its first call
    model.encode(["warm up the model", "and its thread pool"], batch_size=64)
    ids = store.reader.trace_ids(dataset="bench")[:n]
    texts: dict[str, None] = {}
    for batch in store.scoring.batches(kinds={"response"}, trace_ids=ids):
        for trace in batch:
            texts[trace.response or ""] = None
            assert trace.case is not None
            texts[trace.case.stub_response or ""] = None
    embeddings._cache.clear()
    before = embeddings.counts["encoded"]
    result = score_runs(
        store, [fresh_version("response.similarity")], trace_ids=ids, refresh_dashboards=False
    )
    encoded = embeddings.counts["encoded"] - before
    assert encoded == len(texts), (encoded, len(texts))
    started = time.perf_counter()
    model.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    bare = time.perf_counter() - started
    print(
        f"   runner {result.seconds:.2f}s for {n:,} traces ({n / result.seconds:,.0f}/s), "
        f"{encoded:,} texts embedded; bare encode of those texts {bare:.2f}s; "
        f"ratio {result.seconds / bare:.2f}x"
    )


def rouge(pairs: int) -> None:
    from rouge_score import rouge_scorer

    from agentdocket.scorers.rouge import rouge_l

    print(f"\n3. ROUGE-L on {pairs:,} pairs of 60-word texts (target >= 15x rouge-score)")
    rng = random.Random(3)
    vocabulary = WORDS[:300]
    data = [
        (
            " ".join(rng.choice(vocabulary) for _ in range(60)),
            " ".join(rng.choice(vocabulary) for _ in range(60)),
        )
        for _ in range(pairs)
    ]
    reference = rouge_scorer.RougeScorer(["rougeL"])
    started = time.perf_counter()
    theirs = [reference.score(t, p)["rougeL"] for t, p in data]
    slow = time.perf_counter() - started
    started = time.perf_counter()
    ours = [rouge_l(t, p) for t, p in data]
    fast = time.perf_counter() - started
    same = all(
        (a.precision, a.recall, a.fmeasure) == (b.precision, b.recall, b.fmeasure)
        for a, b in zip(ours, theirs, strict=True)
    )
    print(
        f"   rouge-score {pairs / slow:,.0f} pairs/s, ours {pairs / fast:,.0f} pairs/s: "
        f"{slow / fast:.1f}x; identical values: {same}"
    )
    if not same:
        raise SystemExit("ROUGE-L values differ from rouge_score")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--workers", default="1,2", help="worker counts to time, e.g. 1,2")
    parser.add_argument("--similarity-traces", type=int, default=2000)
    parser.add_argument("--rouge-pairs", type=int, default=1000)
    parser.add_argument("--url", default=os.environ.get("AGENTDOCKET_BENCH_URL"))
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    workers = [int(w) for w in args.workers.split(",")]
    url = postgres_url(args.url)
    with fresh_database(url) as bench_url, open_store(bench_url) as store:
        known = cases(300)
        started = time.perf_counter()
        store.datasets.register(Dataset("bench", "1", tuple(known)))
        store.append(traces(args.traces, known))
        maintenance(bench_url, "VACUUM ANALYZE")
        print(
            f"setup: {args.traces:,} synthetic traces stored in "
            f"{time.perf_counter() - started:.0f}s (not timed below)"
        )
        rule_based(store, bench_url, args.traces, workers)
        similarity(store, min(args.similarity_traces, args.traces))
    rouge(args.rouge_pairs)


if __name__ == "__main__":
    main()
