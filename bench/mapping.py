"""The receiver's CPU per span, offline: decoding OTLP/protobuf and mapping spans to events.

    python bench/mapping.py [--spans 20000] [--rounds 3] [--profile decode|map]

Over ``bench/receiver.py``'s spans (OpenInference agent traces, 10 spans per run), encoded by the
stock OTLP encoder in batches of 512 as the exporter sends them. Times are process CPU time
(``time.process_time``, so that other processes on the machine disturb them less), best of
``--rounds``, in microseconds per span:

- ``ParseFromString``: the stock protobuf parse alone (the floor decoding cannot go below);
- ``decode``: :func:`agentdocket.ingest.otlp.decode_protobuf` (parse included);
- ``map``: ``spans_to_events(span_rules.apply(spans), keep_unrecognized=True)``, as the
  receiver calls it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentdocket.ingest import span_rules
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.otlp import decode_protobuf
from bench.receiver import BATCH, make_spans


def best(rounds: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", choices=["decode", "map"])
    args = parser.parse_args()
    spans = make_spans(args.spans)
    bodies = [
        encode_spans(spans[i : i + BATCH]).SerializeToString() for i in range(0, len(spans), BATCH)
    ]
    decoded = [decode_protobuf(b) for b in bodies]

    def parse() -> None:
        for body in bodies:
            ExportTraceServiceRequest().ParseFromString(body)

    def decode() -> None:
        for body in bodies:
            decode_protobuf(body)

    def mapping() -> None:
        for batch in decoded:
            spans_to_events(span_rules.apply(batch), keep_unrecognized=True)

    if args.profile:
        _profile(decode if args.profile == "decode" else mapping)
        return
    n = len(spans)
    print(f"{n} spans in {len(bodies)} requests, CPU time, best of {args.rounds}:")
    for name, work in (("ParseFromString", parse), ("decode", decode), ("map", mapping)):
        print(f"  {name:16s} {best(args.rounds, work) / n * 1e6:6.1f} us/span")
    events = sum(len(spans_to_events(b, keep_unrecognized=True)) for b in decoded[:1])
    print(f"  ({events} events from the first request's {len(decoded[0])} spans)")


def _profile(work: Callable[[], object]) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(work)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
