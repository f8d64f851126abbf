"""Real spans of frameworks no other test installs: the OTLP requests their stock exporters sent,
captured with ``scripts/capture_otlp.py`` into ``tests/fixtures/otlp/`` (each folder's README
says how), replayed through the receiver's decoding and mapping into a store, in the order
they were sent and reversed. Each run is then checked field by field, and scored.

Every capture holds the weather scenario of :mod:`tests.helpers.frameworks`: a correct run, a
run whose model passes the wrong city, and a run whose tool raises."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentdocket.events import Trace
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.ingest.otlp import decode_json
from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.frameworks import DATASET, FAILURE, SCENARIOS, Scenario, dataset

CAPTURES = Path(__file__).parents[1] / "fixtures" / "otlp"


@dataclass(frozen=True)
class Capture:
    """What a capture's runs hold, where it differs between frameworks."""

    folder: str
    agent: str = "weather"
    model: str = "scripted-1"
    cases: bool = True  # the framework carries the run's dataset and case ids
    answered_failure: bool = True  # the model answers after the tool raised
    error: str = FAILURE  # what the failing tool's error text holds


CAPTURED = (
    Capture("smolagents"),
    Capture("strands-default"),
    Capture("strands-latest"),
    Capture("crewai", model="openai/scripted-1"),
    Capture("langgraph-openllmetry", answered_failure=False),
    Capture("adk-2", agent="weather_agent", cases=False, answered_failure=False),
    Capture("openai-v2-latest"),
)


def replay(url: str, folder: str, *, reverse: bool = False) -> None:
    """The capture's trace requests, decoded and mapped as the receiver does, appended."""
    files = sorted((CAPTURES / folder).glob("*-traces.json"), reverse=reverse)
    assert files, folder
    with open_store(url) as store:
        for path in files:
            store.append(spans_to_events(decode_json(path.read_bytes()), keep_unrecognized=True))


def _scenario(trace: Trace) -> Scenario:
    [call, *_] = trace.tool_calls()
    return next(s for s in SCENARIOS if s.called == call.arguments.get("city"))


@pytest.mark.parametrize("capture", CAPTURED, ids=lambda c: c.folder)
@pytest.mark.parametrize("reverse", [False, True], ids=["in-order", "reversed"])
def test_a_captured_framework_lands_whole(sqlite_url: str, capture: Capture, reverse: bool) -> None:
    with open_store(sqlite_url) as store:
        store.register_dataset(dataset())
    replay(sqlite_url, capture.folder, reverse=reverse)
    with open_store(sqlite_url) as store:
        runs = store.list_runs(limit=None)
        assert len(runs) == len(SCENARIOS), [(r["agent"], r["trace_id"]) for r in runs]
        traces = {r["trace_id"]: store.read_trace(r["trace_id"]) for r in runs}
    seen = set()
    for run in runs:
        trace = traces[run["trace_id"]]
        assert trace is not None
        scenario = _scenario(trace)
        seen.add(scenario.name)
        where = f"{capture.folder}: {scenario.name} run"
        failing = scenario.result is None
        assert run["agent"] == capture.agent, where
        assert run["question"] == scenario.question, where
        assert trace.question == scenario.question, where
        if failing and not capture.answered_failure:
            assert run["answer"] is None, (where, run["answer"])
        else:
            assert run["answer"] == scenario.answer, where
        assert trace.response == run["answer"], where
        if capture.cases:
            assert (run["dataset"], run["case_id"]) == (DATASET, scenario.case_id), where
        plan = [(p.tool, p.arguments) for p in trace.plan()]
        assert plan == [("get_weather", {"city": scenario.called})], (where, plan)
        [call] = trace.tool_calls()
        assert call.tool == "get_weather", where
        assert call.arguments == {"city": scenario.called}, (where, call.arguments)
        if failing:
            assert call.error is not None and capture.error in call.error, (where, call.error)
        else:
            assert call.error is None, where
            assert scenario.result in json.dumps(call.result), (where, call.result)
        models = {e.payload["model"] for e in trace.of_kind("llm.called")}
        assert models == {capture.model}, (where, models)
    assert seen == {s.name for s in SCENARIOS}
    if capture.cases:  # the scorers judge a run against its case
        _check_verdicts(sqlite_url, traces)


def _check_verdicts(url: str, traces: dict[str, Trace | None]) -> None:
    """The tool-use scorers pass the correct run and fail the wrong-argument one."""
    for scorer in ("planner.suffix_match", "tools.slot_fill"):
        cli(url, "score", "--dataset", DATASET, "--scorer", scorer)
    with open_store(url) as store:
        verdicts = store.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset=DATASET
        )
    got = {(v.trace_id, v.scorer): v for v in verdicts}
    by_name = {_scenario(t).name: t.trace_id for t in traces.values() if t is not None}
    correct, wrong = by_name["correct"], by_name["wrong-argument"]
    assert got[(correct, "planner.suffix_match")].passed
    assert got[(correct, "tools.slot_fill")].passed
    assert got[(wrong, "planner.suffix_match")].passed
    assert not got[(wrong, "tools.slot_fill")].passed
    assert got[(wrong, "tools.slot_fill")].failure_type == "slot_fill:wrong_argument"
