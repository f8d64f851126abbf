"""A tracer whose spans go to the store (batched, as in production) and to memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentdocket.tracer import CountingBatchSpanProcessor, StoreSpanExporter, Tracer


class Recorder:
    """A tracer whose spans go to the store (batched, as in production) and to memory."""

    def __init__(self, url: str, spool: Path, **exporter: Any) -> None:
        self.exporter = StoreSpanExporter(url, spool_dir=spool, **exporter)
        self.memory = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.processor = CountingBatchSpanProcessor(self.exporter)
        self.provider.add_span_processor(self.processor)
        self.provider.add_span_processor(SimpleSpanProcessor(self.memory))
        self.tracer = Tracer(self.provider)

    def flush(self) -> None:
        assert self.processor.force_flush()

    def close(self) -> None:
        self.provider.shutdown()

    def span(self, name: str) -> ReadableSpan:
        return next(s for s in self.memory.get_finished_spans() if s.name == name)


def record_runs(recorder: Recorder, n: int, label: str) -> None:
    """``n`` small runs (a plan, an SQL tool call, an answer), questions ``label-i``."""
    for i in range(n):
        with recorder.tracer.run("agent", question=f"{label}-{i}") as run:
            run.plan(["sql"])
            with run.tool_call("sql", {"q": i}) as call:
                call.result([i])
            run.respond(f"{label}-{i}")
