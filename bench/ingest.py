"""Ingest benchmark: events appended through the store vs raw psycopg3 binary COPY.

    python bench/ingest.py [--events 200000] [--url postgresql+psycopg://...]

Both sides write the same rows (same ids, same JSON payloads of 300-800 bytes) into the same
PostgreSQL server in the same run. The baseline is a bare table (same columns, no index, no
constraint, no projection); the store also deduplicates, maintains its indexes and keeps the
runs / steps projections current in the same transactions. Prints both rates and the ratio.
Uses a throwaway database, created and dropped here.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import string
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.events import (
    ChatMessage,
    Event,
    LlmCalled,
    Plan,
    PlanStep,
    Response,
    RunFinished,
    RunStarted,
    SqlExecuted,
    ToolCalled,
    ToolReturned,
)
from agentdocket.store import open_store
from agentdocket.store.config import parse_url, psycopg_conninfo
from agentdocket.store.recorder import EVENT_COLUMNS, dumps
from bench.common import fresh_database, postgres_url

WORDS = [
    "".join(random.Random(i).choices(string.ascii_lowercase, k=random.Random(i).randint(3, 9)))
    for i in range(500)
]


def text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def synthetic_events(n: int, seed: int = 7) -> Iterator[Event]:
    """Traces of about ten events each: run, plan, tool calls, SQL, an LLM call, the answer."""
    rng = random.Random(seed)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    made = 0
    run = 0
    while made < n:
        run += 1
        tid = uuid.UUID(int=rng.getrandbits(128)).hex
        root = f"{rng.getrandbits(64):016x}"
        ts = t0 + timedelta(seconds=run)
        seq = iter(range(1000))

        def ev(
            payload: object,
            span: str | None = None,
            tid: str = tid,
            root: str = root,
            ts: datetime = ts,
            seq: Iterator[int] = seq,
        ) -> Event:
            n = next(seq)
            return Event.create(
                trace_id=tid,
                span_id=span or root,
                parent_span_id=None if span is None else root,
                seq=n,
                ts=ts + timedelta(milliseconds=n),
                payload=payload,
            )

        batch = [
            ev(
                RunStarted(
                    agent="bench-agent",
                    agent_version="1.0",
                    strategy="sequential",
                    models={"planner": "m1"},
                    question=text(rng, 250),
                    dataset="bench",
                    case_id=str(run),
                )
            )
        ]
        batch.append(ev(Plan(steps=[PlanStep(tool="sql", text=text(rng, 70)) for _ in range(4)])))
        for k in range(3):
            span = f"{rng.getrandbits(64):016x}"
            batch.append(
                ev(
                    ToolCalled(call_id=f"c{k}", tool="sql", arguments={"query": text(rng, 300)}),
                    span,
                )
            )
            batch.append(
                ev(
                    ToolReturned(
                        call_id=f"c{k}", result=text(rng, 400), duration_ms=rng.random() * 50
                    ),
                    span,
                )
            )
        batch.append(
            ev(
                SqlExecuted(
                    query=text(rng, 200),
                    columns=["a", "b"],
                    rows=[[text(rng, 40), k] for k in range(5)],
                    row_count=5,
                )
            )
        )
        batch.append(
            ev(
                LlmCalled(
                    model="m1",
                    role="responder",
                    temperature=0.0,
                    input_tokens=300,
                    output_tokens=80,
                    input_messages=[ChatMessage("user", text(rng, 250))],
                    output_messages=[ChatMessage("assistant", text(rng, 150))],
                )
            )
        )
        batch.append(ev(Response(text=text(rng, 500))))
        # Every payload is 300-800 bytes, so these runs end with an error and its traceback.
        batch.append(ev(RunFinished(status="error", error=text(rng, 320))))
        for e in batch:
            if made >= n:
                return
            made += 1
            yield e


def payload_sizes(events: list[Event]) -> tuple[int, int, float]:
    sizes = [len(dumps(e.payload)) for e in events]
    return min(sizes), max(sizes), sum(sizes) / len(sizes)


def raw_copy(conninfo: str, events: list[Event], batch: int, fast_json: bool) -> float:
    """Binary COPY of the same rows into a bare table (no index, no constraint).

    ``fast_json``: encode payloads with orjson, as the store does; otherwise psycopg's default
    JSON adaptation (the standard library's json), which is what a plain raw COPY gets.
    """
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bare_events")
        conn.execute("""CREATE TABLE bare_events (event_id uuid, trace_id text, span_id text,
            parent_span_id text, seq bigint, ts timestamptz, kind text, schema_version smallint,
            payload jsonb)""")
        conn.execute("CHECKPOINT")
        types = ["uuid", "text", "text", "text", "int8", "timestamptz", "text", "int2", "jsonb"]
        stmt = sql.SQL("COPY bare_events ({}) FROM STDIN (FORMAT BINARY)").format(
            sql.SQL(", ").join(map(sql.Identifier, EVENT_COLUMNS))
        )
        start = time.perf_counter()
        for i in range(0, len(events), batch):
            with conn.transaction(), conn.cursor() as cur, cur.copy(stmt) as copy:
                copy.set_types(types)
                for e in events[i : i + batch]:
                    payload = (
                        Jsonb(e.payload, dumps=orjson.dumps) if fast_json else Jsonb(e.payload)
                    )
                    copy.write_row(
                        (
                            e.event_id,
                            e.trace_id,
                            e.span_id,
                            e.parent_span_id,
                            e.seq,
                            e.ts,
                            e.kind,
                            e.schema_version,
                            payload,
                        )
                    )
        elapsed = time.perf_counter() - start
        conn.execute("DROP TABLE bare_events")
        return elapsed


def store_append(url: str, events: list[Event], batch: int) -> tuple[float, float]:
    """Seconds to append all events to a fresh store, and to append them all again (retry)."""
    store = open_store(url)
    try:
        store.recorder.connection.execute("CHECKPOINT")
        start = time.perf_counter()
        result = store.append(events, batch_size=batch)
        first = time.perf_counter() - start
        assert result.inserted == len(events), result
        start = time.perf_counter()
        again = store.append(events, batch_size=batch)
        retry = time.perf_counter() - start
        assert again.inserted == 0, again
        return first, retry
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=os.environ.get("AGENTDOCKET_BENCH_URL"))
    args = parser.parse_args()

    url = postgres_url(args.url)
    print(f"generating {args.events} events ...", flush=True)
    events = list(synthetic_events(args.events))
    lo, hi, mean = payload_sizes(events)
    print(
        f"payload bytes: min {lo}, max {hi}, mean {mean:.0f}; "
        f"traces: {len({e.trace_id for e in events})}; rounds: {args.rounds} (medians shown)"
    )
    ours, retries, plain, fast = [], [], [], []
    for _ in range(args.rounds):
        with fresh_database(url) as bench_url:
            first, retry = store_append(bench_url, events, args.batch)
            ours.append(first)
            retries.append(retry)
            conninfo = psycopg_conninfo(parse_url(bench_url))
            plain.append(raw_copy(conninfo, events, args.batch, fast_json=False))
            fast.append(raw_copy(conninfo, events, args.batch, fast_json=True))
    n = len(events)
    t_ours, t_retry = statistics.median(ours), statistics.median(retries)
    t_plain, t_fast = statistics.median(plain), statistics.median(fast)
    print(f"raw COPY, psycopg default JSON   : {n / t_plain:10,.0f} events/s")
    print(f"raw COPY, orjson (strict)        : {n / t_fast:10,.0f} events/s")
    print(f"agentdocket store.append         : {n / t_ours:10,.0f} events/s")
    print(f"store.append of a retried batch  : {n / t_retry:10,.0f} events/s (nothing added)")
    print(f"ratio store / raw COPY           : {t_plain / t_ours:.2f}x  (target >= 0.60x)")
    print(f"ratio store / raw COPY (orjson)  : {t_fast / t_ours:.2f}x")


if __name__ == "__main__":
    main()
