"""Tracer benchmark: the cost of a step on the agent's thread, and steps/s into PostgreSQL.

    python bench/tracer.py [--steps 100000] [--rounds 3] [--url postgresql+psycopg://...]

1. Per step on the agent's thread: a tool call (arguments, result) recorded with our API vs the
   same span made with the bare OpenTelemetry SDK (same name, same attributes, the JSON encoding
   of arguments and result included on both sides), both behind a BatchSpanProcessor with a
   no-op exporter and a queue sized for the burst. Medians of ``--rounds``, alternating order.
   Target: ours <= 1.3x the bare SDK.
2. Into PostgreSQL, each on a fresh database, timed until every event is committed:
   (a) the agent's loop recording through ``StoreSpanExporter`` (both on one interpreter, so
   they share the GIL); (b) the exporter alone, fed the same spans recorded beforehand;
   (c) baseline: the same events (mapped beforehand, untimed) appended with the store.
   Target: >= 10k steps/s.
Drops are counted and printed (they should be 0).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.ingest import attributes as A
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.store import open_store
from agentdocket.tracer import CountingBatchSpanProcessor, StoreSpanExporter, Tracer
from bench.common import fresh_database, postgres_url

STEPS_PER_RUN = 100
QUEUE = 131_072


class NoopExporter(SpanExporter):
    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def _processor(exporter: SpanExporter) -> CountingBatchSpanProcessor:
    return CountingBatchSpanProcessor(
        exporter, max_queue_size=QUEUE, max_export_batch_size=8192, schedule_delay_millis=500
    )


def _arguments(i: int) -> dict[str, Any]:
    return {"query": f"SELECT name FROM singer WHERE singer_id = {i}", "limit": 10}


def _result(i: int) -> list[list[Any]]:
    return [[f"singer {i}", i % 90]]


def ours(tracer: Tracer, steps: int) -> float:
    start = time.perf_counter()
    done = 0
    while done < steps:
        with tracer.run("bench", question="q", strategy="sequential") as run:
            for i in range(min(STEPS_PER_RUN, steps - done)):
                with run.tool_call("sql", _arguments(i)) as call:
                    call.result(_result(i))
                done += 1
    return time.perf_counter() - start


def bare(provider: TracerProvider, steps: int) -> float:
    """The same spans with the OpenTelemetry SDK alone: what an instrumentation writing these
    attributes by hand pays."""
    otel = provider.get_tracer("bare")
    start = time.perf_counter()
    done = 0
    while done < steps:
        root_attrs = {
            A.KIND: "run",
            A.SEQ: 0,
            A.OI_SPAN_KIND: A.OI_AGENT,
            A.AGENT_NAME: "bench",
            A.GEN_AI_OPERATION: A.OP_INVOKE_AGENT,
            A.GEN_AI_AGENT_NAME: "bench",
            A.STRATEGY: "sequential",
            A.INPUT_VALUE: "q",
            A.INPUT_MIME: A.TEXT_MIME,
        }
        with otel.start_as_current_span("invoke_agent bench", attributes=root_attrs) as root:
            seq = 1
            for i in range(min(STEPS_PER_RUN, steps - done)):
                args = orjson.dumps(_arguments(i)).decode()
                attrs = {
                    A.KIND: "tool",
                    A.OI_SPAN_KIND: A.OI_TOOL,
                    A.TOOL_NAME: "sql",
                    A.INPUT_VALUE: args,
                    A.INPUT_MIME: A.JSON_MIME,
                    A.GEN_AI_OPERATION: A.OP_EXECUTE_TOOL,
                    A.GEN_AI_TOOL_NAME: "sql",
                    A.GEN_AI_TOOL_CALL_ARGUMENTS: args,
                    A.SEQ: seq,
                }
                with otel.start_as_current_span("tool sql", attributes=attrs) as span:
                    out = orjson.dumps(_result(i)).decode()
                    span.set_attribute(A.OUTPUT_VALUE, out)
                    span.set_attribute(A.OUTPUT_MIME, A.JSON_MIME)
                    span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, out)
                    span.set_attribute(A.END_SEQ, seq + 1)
                seq += 2
                done += 1
            root.set_attribute(A.RUN_STATUS, "ok")
            root.set_attribute(A.END_SEQ, seq)
    return time.perf_counter() - start


def per_step(steps: int, rounds: int) -> None:
    timings: dict[str, list[float]] = {"bare": [], "ours": []}
    dropped: dict[str, int] = {"bare": 0, "ours": 0}

    def once(name: str) -> None:
        exporter = NoopExporter()
        provider = TracerProvider()
        processor = _processor(exporter)
        provider.add_span_processor(processor)
        seconds = ours(Tracer(provider), steps) if name == "ours" else bare(provider, steps)
        processor.force_flush()
        dropped[name] += processor.ended - exporter.spans
        provider.shutdown()
        timings[name].append(seconds)

    once("ours")  # warm-up (imports, caches), not counted
    timings["ours"].clear()
    dropped["ours"] = 0
    for r in range(rounds):
        for name in ("bare", "ours") if r % 2 == 0 else ("ours", "bare"):
            once(name)
    b = statistics.median(timings["bare"]) / steps * 1e6
    o = statistics.median(timings["ours"]) / steps * 1e6
    print(f"per step on the agent's thread ({steps} tool calls, medians of {rounds} rounds):")
    print(f"  bare OpenTelemetry SDK   {b:7.1f} us/step   dropped {dropped['bare']}")
    print(f"  agentdocket API          {o:7.1f} us/step   dropped {dropped['ours']}")
    print(f"  ratio ours / bare        {o / b:7.2f}x        (target <= 1.30x)")


def _recorded(steps: int) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ours(Tracer(provider), steps)
    provider.shutdown()
    return list(memory.get_finished_spans())


def into_postgres(url: str, steps: int, rounds: int, spool: Path) -> None:
    spans = _recorded(steps)  # the same workload, recorded once (untimed)
    events = spans_to_events(spans)
    timings: dict[str, list[float]] = {"e2e": [], "exporter": [], "append": []}
    dropped = spooled = 0

    def fresh_exporter(bench_url: str) -> StoreSpanExporter:
        exporter = StoreSpanExporter(bench_url, spool_dir=spool)
        exporter.flush_spool()  # connects and migrates the fresh database, outside the timing
        return exporter

    def counted(bench_url: str) -> None:
        with open_store(bench_url) as store:
            stored = store.reader.counts()["events"]
        assert stored == len(events), (stored, len(events))

    for _ in range(rounds):
        # 1. the agent's loop and the exporter together, as in production
        with fresh_database(url) as bench_url:
            exporter = fresh_exporter(bench_url)
            provider = TracerProvider()
            processor = _processor(exporter)
            provider.add_span_processor(processor)
            start = time.perf_counter()
            ours(Tracer(provider), steps)
            processor.force_flush()
            timings["e2e"].append(time.perf_counter() - start)
            dropped += exporter.queue_dropped
            spooled += exporter.stats.spooled
            provider.shutdown()
            counted(bench_url)
        # 2. the exporter alone, on the spans already recorded, in the processor's batch size
        with fresh_database(url) as bench_url:
            exporter = fresh_exporter(bench_url)
            start = time.perf_counter()
            for i in range(0, len(spans), 8192):
                exporter.export(spans[i : i + 8192])
            timings["exporter"].append(time.perf_counter() - start)
            spooled += exporter.stats.spooled
            exporter.shutdown()
            counted(bench_url)
        # 3. baseline: the same events appended straight through the store
        with fresh_database(url) as bench_url, open_store(bench_url) as store:
            start = time.perf_counter()
            store.append(events)
            timings["append"].append(time.perf_counter() - start)
    e2e, alone, base = (statistics.median(timings[k]) for k in ("e2e", "exporter", "append"))
    print(f"into PostgreSQL ({steps} steps = {len(spans)} spans = {len(events)} events, medians):")
    print(
        f"  agent loop + exporter (same process)  {steps / e2e:9,.0f} steps/s  (target >= 10,000)"
    )
    print(f"  exporter alone (spans -> events -> db) {steps / alone:8,.0f} steps/s")
    print(f"  store.append of the same events        {steps / base:8,.0f} steps/s  (baseline)")
    print(f"  ratio exporter alone / baseline        {base / alone:8.2f}x")
    print(f"  dropped {dropped}, spooled {spooled}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", default=os.environ.get("AGENTDOCKET_BENCH_URL"))
    args = parser.parse_args()
    url = postgres_url(args.url)
    per_step(args.steps, args.rounds)
    with tempfile.TemporaryDirectory() as spool:
        into_postgres(url, args.steps, args.rounds, Path(spool))


if __name__ == "__main__":
    main()
