"""One scenario for every agent framework: a weather agent whose scripted model calls
``get_weather`` with arguments, run three times (a correct run, a wrong-argument run, a failing
tool), sent through the framework's own instrumentation and the stock OTLP exporter to
``agentdocket serve``; then checked field by field and scored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentdocket.events import Case, Dataset, ExpectedCall, Trace
from agentdocket.store import open_store
from agentdocket.tracer import CaseSpanProcessor
from tests.helpers.db import cli

DATASET = "weather-fw"
AGENT = "weather"
INSTRUCTIONS = "Answer questions about the weather."
FAILURE = "no weather station in Atlantis"


@dataclass(frozen=True)
class Scenario:
    """One run: the case it answers, the city the model asks the tool about."""

    name: str
    case_id: str
    asked: str  # the city the question is about
    called: str  # the city the model passes to the tool

    @property
    def question(self) -> str:
        return f"What is the weather in {self.asked}?"

    @property
    def answer(self) -> str:
        if self.called == "Atlantis":
            return "I could not get the weather in Atlantis."
        return f"It is 18 C in {self.called}."

    @property
    def result(self) -> str | None:
        return None if self.called == "Atlantis" else weather(self.called)

    @property
    def metadata(self) -> dict[str, str]:
        """What OpenInference's ``using_metadata`` or LangChain's config metadata carry."""
        return {"agentdocket.dataset": DATASET, "agentdocket.case_id": self.case_id}


SCENARIOS = (
    Scenario("correct", "paris", "Paris", "Paris"),
    Scenario("wrong-argument", "paris", "Paris", "Rome"),
    Scenario("failing-tool", "atlantis", "Atlantis", "Atlantis"),
)


def weather(city: str) -> str:
    """The weather in a city (the tool every framework wraps)."""
    if city == "Atlantis":
        raise ValueError(FAILURE)
    return f"18 C in {city}"


def dataset() -> Dataset:
    return Dataset(
        DATASET,
        "1",
        tuple(
            Case(
                case_id=case_id,
                question=f"What is the weather in {city}?",
                expected_plan=["get_weather"],
                expected_calls=[ExpectedCall("get_weather", {"city": city})],
                reference_answer=f"It is 18 C in {city}.",
            )
            for case_id, city in (("paris", "Paris"), ("atlantis", "Atlantis"))
        ),
    )


@contextmanager
def exporting(
    endpoint: str, service: str = "weather-svc", *, grpc: bool = False
) -> Iterator[TracerProvider]:
    """A provider sending through the stock OTLP/HTTP exporter (or the gRPC one to a
    ``host:port`` endpoint), batched as in production, flushed and shut down at the end;
    spans inside ``tracer.for_case`` carry its case."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(CaseSpanProcessor())
    exporter: Any
    if grpc:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        exporter = GrpcSpanExporter(endpoint=endpoint, insecure=True)
    else:
        exporter = OTLPSpanExporter(endpoint=endpoint)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    try:
        yield provider
    finally:
        assert provider.force_flush(30_000)
        provider.shutdown()


@contextmanager
def instrumented(instrumentor: Any, endpoint: str) -> Iterator[TracerProvider]:
    """An OpenInference instrumentor sending through :func:`exporting` while inside."""
    with exporting(endpoint) as provider:
        instrumentor.instrument(tracer_provider=provider)
        try:
            yield provider
        finally:
            instrumentor.uninstrument()


@dataclass(frozen=True)
class Expected:
    """What differs between frameworks."""

    model: str
    tokens: tuple[int | None, int | None] | None = None  # per call, when the model reports them
    error: str = FAILURE  # what the failing tool's error text holds
    agent: str = AGENT
    llm_calls: int = 2


def check_runs(url: str, expected: Expected) -> dict[str, Trace]:
    """One run per invocation, each field by field; then the tool-use scorers' verdicts.
    Returns the traces by scenario name."""
    with open_store(url) as store:
        runs = store.reader.list_runs(dataset=DATASET, limit=None)
        assert len(runs) == len(SCENARIOS), [r["trace_id"] for r in runs]
        traces = {r["trace_id"]: store.reader.read_trace(r["trace_id"]) for r in runs}
    by_name: dict[str, Trace] = {}
    for run in runs:
        trace = traces[run["trace_id"]]
        assert trace is not None
        [call] = trace.tool_calls()
        scenario = next(s for s in SCENARIOS if s.called == call.arguments.get("city"))
        by_name[scenario.name] = trace
        where = f"{scenario.name} run"
        assert run["agent"] == expected.agent, where
        assert run["case_id"] == scenario.case_id, where
        assert run["status"] == "ok", where
        assert trace.question == scenario.question, where
        assert trace.response == scenario.answer, where
        # stored in the run's row as they arrived, the same as the trace reads
        assert (run["question"], run["answer"]) == (scenario.question, scenario.answer), where
        assert [(p.tool, p.arguments) for p in trace.plan()] == [
            ("get_weather", {"city": scenario.called})
        ], where
        assert call.tool == "get_weather" and call.arguments == {"city": scenario.called}, where
        assert call.returned, where
        if scenario.result is None:
            assert call.error is not None and expected.error in call.error, (where, call.error)
        else:
            assert call.error is None, where
            assert scenario.result in json.dumps(call.result), (where, call.result)
        llm = trace.of_kind("llm.called")
        assert len(llm) == expected.llm_calls, (where, [e.payload["model"] for e in llm])
        assert {e.payload["model"] for e in llm} == {expected.model}, where
        if expected.tokens is not None:
            assert [
                (e.payload.get("input_tokens"), e.payload.get("output_tokens")) for e in llm[:1]
            ] == [expected.tokens], where
    _check_verdicts(url, by_name)
    return by_name


def _check_verdicts(url: str, traces: dict[str, Trace]) -> None:
    cli(url, "score", "--dataset", DATASET, "--scorer", "planner.suffix_match")
    cli(url, "score", "--dataset", DATASET, "--scorer", "tools.slot_fill")
    with open_store(url) as store:
        verdicts = store.scoring.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset=DATASET
        )
    got: dict[tuple[str, str], Any] = {(v.trace_id, v.scorer): v for v in verdicts}
    correct, wrong = traces["correct"].trace_id, traces["wrong-argument"].trace_id
    assert got[(correct, "planner.suffix_match")].passed
    assert got[(correct, "tools.slot_fill")].passed
    assert got[(wrong, "planner.suffix_match")].passed
    assert not got[(wrong, "tools.slot_fill")].passed
    assert got[(wrong, "tools.slot_fill")].failure_type == "slot_fill:wrong_argument"
