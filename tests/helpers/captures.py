"""The corpus of real spans (``tests/fixtures/otlp/``): replaying a capture into a store as the
receiver reads it, checking what landed field by field, and the conformance table the docs show
(``docs/recording/conventions.md``), which this module writes:

    .venv/bin/python -m tests.helpers.captures          # rewrite the table
    .venv/bin/python -m tests.helpers.captures --check  # exit 1 when it is stale
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentdocket.events import Trace
from agentdocket.ingest.readers import READERS
from agentdocket.store import open_store
from tests.helpers.frameworks import DATASET, FAILURE, SCENARIOS, Scenario, dataset

ROOT = Path(__file__).parents[2]
CAPTURES = ROOT / "tests" / "fixtures" / "otlp"
DOC = ROOT / "docs" / "recording" / "conventions.md"
BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"


@dataclass(frozen=True)
class Capture:
    """A capture, what its framework can carry and how it was made."""

    folder: str
    framework: str
    instrumentation: str
    agent: str = "weather"
    model: str = "scripted-1"
    cases: bool = True  # the framework carries the run's dataset and case ids
    # fields the capture carries in a form not read (yet): held to staying exactly these
    lost: frozenset[str] = frozenset()
    answered_failure: bool = True  # the model answers after the tool raised
    error: str = FAILURE  # what the failing tool's error text holds, as the framework sends it
    supported: bool = True  # held to every field (but `lost`) by the tests


CAPTURED = (
    Capture("smolagents", "smolagents 1.26", "OpenInference"),
    Capture("strands-default", "Strands Agents 1.62", "native GenAI (default)"),
    Capture("strands-latest", "Strands Agents 1.62", "native GenAI (`gen_ai_latest_experimental`)"),
    Capture("crewai", "CrewAI 1.15", "OpenInference (+ LiteLLM)", model="openai/scripted-1"),
    Capture(
        "langgraph-openllmetry",
        "LangGraph 1.2",
        "OpenLLMetry (`opentelemetry-instrumentation-langchain` 0.62)",
        answered_failure=False,
    ),
    Capture(
        "adk-2",
        "Google ADK 2.13",
        "native GenAI, content on spans",
        agent="weather_agent",
        cases=False,
        answered_failure=False,
    ),
    Capture(
        "adk-2-schema1",
        "Google ADK 2.13, older layout",
        "native (schema 1), content in logs",
        agent="weather_agent",
        cases=False,
        answered_failure=False,
    ),
    Capture(
        "openai-v2",
        "OpenAI client",
        "`opentelemetry-instrumentation-openai-v2` 2.3, content in logs",
    ),
    Capture(
        "openai-v2-latest",
        "OpenAI client",
        "`opentelemetry-instrumentation-openai-v2` 2.4, content on spans",
    ),
    Capture(
        "openai-genai-1.3",
        "OpenAI client",
        "`opentelemetry-instrumentation-genai-openai` 1.3, content in logs",
    ),
    Capture(
        "mcp",
        "MCP tool call, mcp 2.3",
        "native MCP tracing, client and server",
        # mcp 2.x hands its client a generic error, the tool's own message stays in the server
        error="Error executing tool get_weather",
    ),
    Capture(
        "llamaindex-openllmetry",
        "LlamaIndex 0.14 (FunctionAgent)",
        "OpenLLMetry (`opentelemetry-instrumentation-llamaindex` 0.62)",
        cases=False,  # the instrumentation alone attaches no run settings
        # the GenAI messages of its model spans leave out a streamed reply's tool calls: they
        # are only in LlamaIndex's own message records, in the task spans' traceloop.entity.*
        lost=frozenset({"plan"}),
    ),
    Capture(
        "adk-2-nocontent",
        "Google ADK 2.13",
        "native GenAI, default (no content)",
        agent="weather_agent",
        cases=False,
        answered_failure=False,
        supported=False,
    ),
    Capture(
        "adk-1",
        "Google ADK 1.10",
        "native (pre-GenAI names)",
        agent="weather_agent",
        cases=False,
        answered_failure=False,
        supported=False,
    ),
)
FIELDS = (
    "runs",
    "agent",
    "question",
    "answer",
    "plan",
    "arguments",
    "result",
    "error",
    "model",
    "tokens",
    "case ids",
)


def replay(url: str, folder: str, *, reverse: bool = False) -> None:
    """The capture's requests (traces and logs), read as the receiver reads them, appended in
    the order they were sent or reversed (so that log records come before their spans)."""
    files = sorted((CAPTURES / folder).glob("[0-9][0-9][0-9]-*.json"), reverse=reverse)
    assert files, folder
    with open_store(url) as store:
        for path in files:
            signal = path.stem.split("-", 1)[1]
            _, events = READERS[signal][False](path.read_bytes())
            store.append(events)


def scenario_of(trace: Trace) -> Scenario | None:
    """The scenario a run played, by the city its tool was called with."""
    for call in trace.tool_calls():
        if isinstance(call.arguments, dict):
            found = [s for s in SCENARIOS if s.called == call.arguments.get("city")]
            if found:
                return found[0]
    return None


def check(url: str, capture: Capture) -> dict[str, list[str]]:
    """What is wrong with each field of the capture's stored runs (no entry: right)."""
    wrong: dict[str, list[str]] = {}

    def fail(field: str, where: str, detail: object) -> None:
        wrong.setdefault(field, []).append(f"{where}: {detail!r}")

    with open_store(url) as store:
        runs = store.reader.list_runs(limit=None)[::-1]  # oldest first: the order they were played
        traces = {r["trace_id"]: store.reader.read_trace(r["trace_id"]) for r in runs}
    played = {}
    for i, run in enumerate(runs):
        trace = traces[run["trace_id"]]
        scenario = scenario_of(trace) if trace is not None else None
        if scenario is None and len(runs) == len(SCENARIOS):  # arguments unknown: by order
            scenario = SCENARIOS[i]
        if trace is None or scenario is None or scenario.name in played:
            fail("runs", run["trace_id"], "not one run per invocation")
            continue
        played[scenario.name] = trace
        where, failing = scenario.name, scenario.result is None
        if run["agent"] != capture.agent:
            fail("agent", where, run["agent"])
        if run["question"] != scenario.question or trace.question != run["question"]:
            fail("question", where, run["question"])
        answer = None if failing and not capture.answered_failure else scenario.answer
        if run["answer"] != answer or trace.response != run["answer"]:
            fail("answer", where, run["answer"])
        plan = [(p.tool, p.arguments) for p in trace.plan()]
        if plan != [("get_weather", {"city": scenario.called})]:
            fail("plan", where, plan)
        calls = trace.tool_calls()
        if [(c.tool, c.arguments) for c in calls] != [("get_weather", {"city": scenario.called})]:
            fail("arguments", where, [(c.tool, c.arguments) for c in calls])
        outcome = "error" if failing else "result"
        if len(calls) != 1:
            fail(outcome, where, f"{len(calls)} tool calls")
        elif failing and (calls[0].error is None or capture.error not in calls[0].error):
            fail("error", where, calls[0].error)
        elif not failing and scenario.result not in json.dumps(calls[0].result):
            fail("result", where, calls[0].result)
        llm = trace.of_kind("llm.called")
        if {e.payload["model"] for e in llm} != {capture.model}:
            fail("model", where, sorted({e.payload["model"] for e in llm}))
        if not llm or not all(
            isinstance(e.payload.get("input_tokens"), int)
            and isinstance(e.payload.get("output_tokens"), int)
            for e in llm
        ):
            fail("tokens", where, [e.payload.get("input_tokens") for e in llm])
        if capture.cases and (run["dataset"], run["case_id"]) != (DATASET, scenario.case_id):
            fail("case ids", where, (run["dataset"], run["case_id"]))
    if set(played) != {s.name for s in SCENARIOS}:
        fail("runs", capture.folder, sorted(played))
    return wrong


def conformance() -> list[tuple[Capture, dict[str, list[str]]]]:
    """Each capture replayed into a fresh SQLite store, and what is wrong with it."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, capture in enumerate(CAPTURED):
            url = f"sqlite:///{tmp}/c{i}.db"
            with open_store(url) as store:
                store.datasets.register(dataset())
            replay(url, capture.folder)
            out.append((capture, check(url, capture)))
    return out


def table() -> str:
    """The docs' conformance table: a row per capture, a column per field."""
    head = ["framework", "instrumentation", *FIELDS]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for capture, wrong in conformance():
        marks = []
        for field in FIELDS:
            if field == "case ids" and not capture.cases:
                marks.append("not carried")
            else:
                marks.append("no" if field in wrong else "yes")
        name = f"{capture.framework} (`{capture.folder}`)"
        lines.append("| " + " | ".join([name, capture.instrumentation, *marks]) + " |")
    return "\n".join(lines)


def main() -> int:
    text = DOC.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + table() + "\n" + text[end:]
    if "--check" in sys.argv[1:]:
        if new != text:
            print(f"{DOC} is stale: run python -m tests.helpers.captures", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
