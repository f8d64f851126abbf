"""The LangChain callback handler, driving a real langchain-core tool-calling loop with a fake
chat model that emits tool calls: the run tree as events, scored; durability; redaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda

from agentdocket.events import Trace
from agentdocket.ingest.langchain import AgentdocketHandler
from agentdocket.ingest.sink import Sink
from agentdocket.store import open_store
from tests.helpers.db import assert_absent, cli
from tests.helpers.langchain_agent import get_weather, weather_agent, weather_dataset

OPENAI_KEY = "sk-proj-Zq8T3xLw0aVbN4mR7yCe2uKd"


def _traces(url: str) -> list[Trace]:
    with open_store(url) as store:
        return [t for batch in store.scoring.batches() for t in batch]


def test_the_run_tree_becomes_events(url: str, tmp_path: Path) -> None:
    tracer = AgentdocketHandler(url, spool_dir=str(tmp_path / "spool"), strategy="loop")
    try:
        agent = weather_agent("Paris", retrieve=True)
        answer = agent.invoke(
            "Weather in Paris?",
            config={"callbacks": [tracer], "metadata": {"agentdocket.case_id": "paris"}},
        )
        tracer.flush()
    finally:
        tracer.close()
    assert answer == "It is 18 C in Paris."
    [trace] = _traces(url)
    kinds = [e.kind for e in trace.events]
    assert kinds == [
        "run.started",
        "retrieval",
        "llm.called",
        "plan",
        "tool.called",
        "tool.returned",
        "llm.called",
        "response",
        "run.finished",
    ]
    started = trace.started
    assert started is not None
    assert (started.agent, started.question, started.case_id, started.strategy) == (
        "weather-agent",
        "Weather in Paris?",
        "paris",
        "loop",
    )
    assert started.models == {"llm": "GenericFakeChatModel"}
    retrieval = trace.of_kind("retrieval")[0].payload
    assert [(d["id"], d["score"], d["text"]) for d in retrieval["documents"]] == [
        ("doc-fr", 0.92, "Paris is in France."),
        ("doc-it", 0.41, "Rome is in Italy."),
    ]
    first_llm = trace.of_kind("llm.called")[0].payload
    assert [(m["role"], m["content"]) for m in first_llm["input_messages"]] == [
        ("user", "Weather in Paris?")
    ]
    assert first_llm["output_messages"][0]["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_Paris"}
    ]
    last_llm = trace.of_kind("llm.called")[1].payload
    assert [m["role"] for m in last_llm["input_messages"]] == ["user", "assistant", "tool"]
    assert [s.tool for s in trace.plan()] == ["get_weather"]
    [call] = trace.tool_calls()
    assert (call.call_id, call.tool, call.arguments, call.result) == (
        "call_Paris",
        "get_weather",
        {"city": "Paris"},
        "18 C in Paris",
    )
    assert trace.response == "It is 18 C in Paris."
    assert trace.status == "ok"
    # The tree: every step hangs from the root run's span.
    root = trace.events[0].span_id
    assert trace.events[0].parent_span_id is None
    assert {e.parent_span_id for e in trace.events[1:-2]} == {root}


def test_handler_runs_are_scored(url: str, tmp_path: Path) -> None:
    with open_store(url) as store:
        store.datasets.register(weather_dataset())
    tracer = AgentdocketHandler(url, spool_dir=str(tmp_path / "spool"), dataset="weather")
    try:
        for case, city in (("paris", "Paris"), ("rome", "Milan")):
            weather_agent(city).invoke(
                f"Weather in {case.title()}?",
                config={"callbacks": [tracer], "metadata": {"agentdocket.case_id": case}},
            )
    finally:
        tracer.close()
    cli(url, "score", "--dataset", "weather", "--scorer", "planner.suffix_match")
    cli(url, "score", "--dataset", "weather", "--scorer", "tools.slot_fill")
    with open_store(url) as store:
        case_of = {r["trace_id"]: r["case_id"] for r in store.reader.list_runs(dataset="weather")}
        verdicts = store.scoring.report_verdicts(
            {"planner.suffix_match": "1", "tools.slot_fill": "2"}, dataset="weather"
        )
    got = {(case_of[v.trace_id], v.scorer): v for v in verdicts}
    assert len(got) == 4
    assert got[("paris", "planner.suffix_match")].passed
    assert got[("paris", "tools.slot_fill")].passed
    assert got[("rome", "planner.suffix_match")].passed
    assert got[("rome", "tools.slot_fill")].failure_type == "slot_fill:wrong_argument"


def test_runs_wait_in_the_spool_while_the_database_is_away(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'later.db'}"
    away = {"on": True}

    def factory() -> Any:
        if away["on"]:
            raise OSError("database away")
        return open_store(url)

    sink = Sink(url, spool_dir=tmp_path / "spool", store_factory=factory, retry_initial_s=0.0)
    tracer = AgentdocketHandler(sink=sink)
    assert weather_agent("Paris").invoke("Weather?", config={"callbacks": [tracer]})
    tracer.flush()
    assert sink.stats.spooled > 0 and sink.stats.delivered == 0
    away["on"] = False
    assert sink.flush_spool()
    tracer.close()
    [trace] = _traces(url)
    assert trace.response == "It is 18 C in Paris."


def test_a_failing_tool_is_recorded_and_the_agent_sees_only_its_own_error(
    sqlite_url: str, tmp_path: Path
) -> None:
    from langchain_core.runnables import RunnableLambda

    def broken(question: str) -> str:
        get_weather.invoke({"city": 42, "unknown": True})
        return "unreachable"

    tracer = AgentdocketHandler(sqlite_url, spool_dir=str(tmp_path / "spool"))
    with pytest.raises(Exception, match="validation error"):
        RunnableLambda(broken).invoke("x", config={"callbacks": [tracer]})
    tracer.close()
    [trace] = _traces(sqlite_url)
    assert trace.status == "error"
    [call] = trace.tool_calls()
    assert call.error and "validation error" in call.error


def test_a_secret_through_the_handler_never_reaches_the_database(url: str, tmp_path: Path) -> None:
    tracer = AgentdocketHandler(url, spool_dir=str(tmp_path / "spool"))
    weather_agent("Paris", secret=OPENAI_KEY).invoke(
        f"Use key {OPENAI_KEY}", config={"callbacks": [tracer]}
    )
    tracer.close()
    assert_absent(url, OPENAI_KEY)


@pytest.mark.parametrize(
    "question",
    [
        [("user", "Weather in Paris?")],
        [HumanMessage("Weather in Paris?")],
        ("user", "Weather in Paris?"),
    ],
    ids=["tuple-in-list", "message-object", "tuple"],
)
def test_message_objects_and_tuples_are_read_as_text_never_repr(
    sqlite_url: str, tmp_path: Path, question: Any
) -> None:
    """A graph-style agent takes and returns message objects (LangGraph's state): the run's
    question and answer are their text."""

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        reply = AIMessage(content=[{"type": "text", "text": "It is 18 C in Paris."}])
        return {"messages": [*state["messages"], reply]}

    handler = AgentdocketHandler(sqlite_url, spool_dir=str(tmp_path / "spool"))
    try:
        messages = question if isinstance(question, list) else [question]
        RunnableLambda(agent).with_config(run_name="graph").invoke(
            {"messages": messages}, config={"callbacks": [handler]}
        )
        handler.flush()
    finally:
        handler.close()
    [trace] = _traces(sqlite_url)
    assert trace.started is not None and trace.started.question == "Weather in Paris?"
    assert trace.response == "It is 18 C in Paris."
