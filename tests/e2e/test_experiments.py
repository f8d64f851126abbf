"""`agentdocket experiment run`: a LangChain agent (a fake chat model that calls a tool,
instrumented by OpenInference) over a dataset of our own cases, every call a recorded, linked
and scored run; killed halfway, the next run completes only what is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentdocket.store import open_store
from tests.helpers.db import ROOT, cli

CITIES = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Quito"]

AGENT = '''
import os
from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from openinference.instrumentation.langchain import LangChainInstrumentor

if os.environ.get("OPENINFERENCE") == "1":
    LangChainInstrumentor().instrument()  # on the global provider, which the experiment sets


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def answer_via_handler(case):
    """The same agent, traced by our LangChain handler instead of OpenInference."""
    from agentdocket.ingest.langchain import AgentdocketHandler

    global HANDLER
    if HANDLER is None:
        HANDLER = AgentdocketHandler()  # AGENTDOCKET_DATABASE_URL
    try:
        return answer(case, {"callbacks": [HANDLER]})
    finally:
        HANDLER.flush()


HANDLER = None


def answer(case, config=None):
    city = case.question.removeprefix("What is the weather in ").rstrip("?")
    if city == "Lima" and not Path(os.environ["KILL_MARKER"]).exists():
        Path(os.environ["KILL_MARKER"]).touch()
        os.kill(os.getpid(), 9)  # killed halfway, the first time only
    called = "Roma" if city == "Rome" else city  # one wrong argument
    model = GenericFakeChatModel(messages=iter([
        AIMessage(content="", tool_calls=[
            {"name": "get_weather", "args": {"city": called}, "id": "call_1"}]),
        AIMessage(content=f"It is 18 C in {called}."),
    ]))
    messages = [HumanMessage(case.question)]
    while True:
        reply = model.invoke(messages, config=config)
        messages.append(reply)
        if not reply.tool_calls:
            return reply.content
        for call in reply.tool_calls:
            result = get_weather.invoke(call["args"], config=config)
            messages.append(ToolMessage(result, tool_call_id=call["id"]))
'''


def _weather_cases(folder: Path, cities: list[str], ids: list[str] | None = None) -> Path:
    """A case file of weather questions, one per city (ids: the cities in lower case)."""
    path = folder / "cases.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {
                    "case_id": case_id,
                    "question": f"What is the weather in {city}?",
                    "expected_plan": ["get_weather"],
                    "expected_calls": [{"tool": "get_weather", "arguments": {"city": city}}],
                    "stub_response": f"It is 18 C in {city}.",
                }
            )
            + "\n"
            for case_id, city in zip(ids or [c.lower() for c in cities], cities, strict=True)
        )
    )
    return path


def _experiment(
    url: str, tmp_path: Path, agent: str = "weather_agent:answer", openinference: bool = True
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-c",
        "from agentdocket.cli import main; main()",
        "--database",
        url,
        "experiment",
        "run",
        "--dataset",
        "cities",
        "--agent",
        agent,
        "--agent-version",
        "1",
        "--scorer",
        "planner.suffix_match",
        "--scorer",
        "tools.slot_fill",
        "--format",
        "json",
    ]
    env = {
        **os.environ,
        "KILL_MARKER": str(tmp_path / "killed"),
        "PYTHONPATH": str(ROOT),
        "AGENTDOCKET_DATABASE_URL": url,  # for the handler
        "OPENINFERENCE": "1" if openinference else "0",
    }
    return subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )


def test_an_experiment_records_links_scores_and_resumes(url: str, tmp_path: Path) -> None:
    (tmp_path / "weather_agent.py").write_text(AGENT)
    cases = _weather_cases(tmp_path, CITIES)
    cli(url, "datasets", "add", str(cases), "--name", "cities", "--version", "1")
    first = _experiment(url, tmp_path)
    assert first.returncode == -9, first.stderr  # killed at Lima, the fourth case
    with open_store(url) as store:
        done = {r["case_id"] for r in store.scoring.case_runs("cities") if r["status"] is not None}
    assert done == {"paris", "rome", "oslo"}
    second = _experiment(url, tmp_path)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout)
    assert (summary["ran"], summary["skipped"], summary["errored"]) == (3, 3, 0)
    assert summary["experiment"] == "weather_agent@1" and summary["runs"] == 6
    with open_store(url) as store:
        runs = [r for r in store.scoring.case_runs("cities") if r["status"] is not None]
        assert sorted(r["case_id"] for r in runs) == sorted(c.lower() for c in CITIES)
        for r in runs:
            assert r["attributes"]["experiment"] == "weather_agent@1"
            assert r["attributes"]["repeat"] == 0 and r["agent_version"] == "1"
            trace = store.reader.read_trace(r["trace_id"])
            assert trace is not None
            [call] = trace.tool_calls()  # the instrumented LangChain tool call is the run's
            assert call.tool == "get_weather"
            assert trace.response == f"It is 18 C in {call.arguments['city']}."
        verdicts = store.scoring.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset="cities"
        )
    by_case = {
        (next(r["case_id"] for r in runs if r["trace_id"] == v.trace_id), v.scorer): v
        for v in verdicts
    }
    assert by_case[("paris", "tools.slot_fill")].passed
    rome = by_case[("rome", "tools.slot_fill")]
    assert not rome.passed and rome.failure_type == "slot_fill:wrong_argument"
    assert all(by_case[(c.lower(), "planner.suffix_match")].passed for c in CITIES)


def test_our_langchain_handler_inside_an_experiment_joins_its_runs(
    url: str, tmp_path: Path
) -> None:
    (tmp_path / "weather_agent.py").write_text(AGENT)
    (tmp_path / "killed").touch()  # no kill this time
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"case_id": "oslo", "question": "What is the weather in Oslo?"}) + "\n"
    )
    cli(url, "datasets", "add", str(cases), "--name", "cities", "--version", "1")
    done = _experiment(url, tmp_path, "weather_agent:answer_via_handler", openinference=False)
    assert done.returncode == 0, done.stderr
    with open_store(url) as store:
        [run] = store.scoring.case_runs("cities")
        assert run["attributes"]["experiment"] == "weather_agent@1"
        trace = store.reader.read_trace(run["trace_id"])
        [(stored,)] = store.recorder.read("SELECT count(DISTINCT trace_id) FROM events")
    assert trace is not None and stored == 1  # the handler's steps are in the run's trace
    [call] = trace.tool_calls()
    assert (call.tool, call.arguments, call.result) == (
        "get_weather",
        {"city": "Oslo"},
        "18 C in Oslo",
    )
    assert len(trace.of_kind("llm.called")) == 2
    assert trace.response == "It is 18 C in Oslo." and len(trace.of_kind("run.started")) == 1


PLANNING_AGENT = '''
from agentdocket import tracer


@tracer.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def answer(case):
    """Records its plan on the experiment's run, calls its tool, answers; a provider's
    timeout (TimeoutError) on Oslo."""
    city = case.question.removeprefix("What is the weather in ").rstrip("?")
    if city == "Oslo":
        raise TimeoutError("the provider did not answer in 30 s")
    tracer.current_run().plan(["get_weather"])
    return f"It is {get_weather(city)}."
'''


def test_an_agent_records_its_plan_and_its_timeouts_fail_only_its_run(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The documented way for an agent to record its plan (``tracer.current_run()``), and a
    ``TimeoutError`` raised by the agent (as provider timeouts arrive) with no experiment
    timeout set: that run fails with its error, the others go on and are scored."""
    (tmp_path / "planning_agent.py").write_text(PLANNING_AGENT)
    cases = _weather_cases(tmp_path, CITIES)
    cli(sqlite_url, "datasets", "add", str(cases), "--name", "cities", "--version", "1")
    done = _experiment(sqlite_url, tmp_path, "planning_agent:answer", openinference=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["ran"], summary["errored"]) == (6, 1)
    assert summary["errors"] == ["oslo #0: TimeoutError: the provider did not answer in 30 s"]
    with open_store(sqlite_url) as store:
        runs = {r["case_id"]: r for r in store.scoring.case_runs("cities")}
        oslo = store.reader.run(runs["oslo"]["trace_id"])
        assert oslo is not None and oslo["status"] == "error"
        assert oslo["error"] == "TimeoutError: the provider did not answer in 30 s"
        verdicts = store.scoring.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset="cities"
        )
    passed = {(v.trace_id, v.scorer): v.passed for v in verdicts}
    for city in CITIES:
        if city != "Oslo":
            tid = runs[city.lower()]["trace_id"]
            assert passed[(tid, "planner.suffix_match")] and passed[(tid, "tools.slot_fill")]


REGRESSING_AGENT = '''
import os

from agentdocket import tracer


@tracer.tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 C in {city}"


def answer(case):
    """Version 1.1 asks about the wrong city on the last seven cases."""
    city = case.question.removeprefix("What is the weather in ").rstrip("?")
    if os.environ["AGENT_VERSION"] == "1.1" and case.case_id >= "c3":
        city = "Atlantis"
    tracer.current_run().plan(["get_weather"])
    return f"It is {get_weather(city)}."
'''


def test_a_regression_on_seven_of_ten_cases_fails_the_gate(sqlite_url: str, tmp_path: Path) -> None:
    """A user's ten cases and two versions, every scorer selected by default: 1.1 passes
    tools.slot_fill on 3 of 10 cases against 10 of 10. The gate fails, and the pull-request
    comment says which scorer and which cases."""
    (tmp_path / "regressing_agent.py").write_text(REGRESSING_AGENT)
    cities = ["Paris", "Rome", "Oslo", "Lima", "Cairo", "Quito", "Bern", "Riga", "Baku", "Doha"]
    cases = _weather_cases(tmp_path, cities, [f"c{i}" for i in range(len(cities))])
    cli(sqlite_url, "datasets", "add", str(cases), "--name", "mine", "--version", "1")
    for version in ("1.0", "1.1"):
        command = [
            sys.executable,
            "-c",
            "from agentdocket.cli import main; main()",
            "--database",
            sqlite_url,
            "experiment",
            "run",
            "--dataset",
            "mine",
            "--agent",
            "regressing_agent:answer",
            "--agent-version",
            version,
            "--format",
            "json",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENT_VERSION": version}
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stderr
    from click.testing import CliRunner

    from agentdocket.cli import main

    gate = CliRunner().invoke(
        main,
        [
            "--database",
            sqlite_url,
            "compare",
            "--dataset",
            "mine",
            "--baseline",
            "experiment:regressing_agent@1.0",
            "--candidate",
            "experiment:regressing_agent@1.1",
            "--format",
            "markdown",
            "--fail-on-regression",
        ],
        obj={},
    )
    assert gate.exit_code == 1, gate.output
    assert "**regression: " in gate.output
    assert (
        "7 of 10 cases regressed and 0 improved on tools.slot_fill (p = 0.0156; significant "
        "after adjusting for 3 scorers)"
    ) in gate.output
    assert "no regression" not in gate.output
    for i in range(3, 10):
        assert f"c{i}: " in gate.output and "tools.slot_fill regressed" in gate.output
