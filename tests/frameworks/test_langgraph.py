"""LangGraph's prebuilt ReAct agent, through OpenInference's LangChain instrumentation and
through our LangChain handler."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool

from agentdocket.ingest.langchain import AgentdocketHandler
from agentdocket.store import open_store
from tests.helpers.frameworks import (
    INSTRUCTIONS,
    SCENARIOS,
    Expected,
    Scenario,
    check_runs,
    instrumented,
    weather,
)
from tests.helpers.otlp_server import Server

# create_react_agent, the prebuilt ReAct agent, is deprecated in favour of langchain's
# create_agent since LangGraph 1.0; it is the one users run today.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:create_react_agent")]


class ScriptedChatModel(GenericFakeChatModel):
    """A chat model that replies from a script; binding tools changes nothing."""

    model_name: str = "scripted-1"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return weather(city)


def _agent(scenario: Scenario) -> Any:
    from langgraph.prebuilt import create_react_agent

    usage = {"input_tokens": 20, "output_tokens": 7, "total_tokens": 27}
    model = ScriptedChatModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {"name": "get_weather", "args": {"city": scenario.called}, "id": "call_1"}
                    ],
                    usage_metadata=usage,  # type: ignore[arg-type]
                ),
                AIMessage(content=scenario.answer, usage_metadata=usage),  # type: ignore[arg-type]
            ]
        )
    )
    from langgraph.prebuilt import ToolNode

    tools = ToolNode([get_weather], handle_tool_errors=True)
    return create_react_agent(model, tools, name="weather", prompt=INSTRUCTIONS)


def _invoke(scenario: Scenario, callbacks: list[Any] | None = None) -> None:
    out = _agent(scenario).invoke(
        {"messages": [("user", scenario.question)]},
        config={"metadata": scenario.metadata, "callbacks": callbacks or []},
    )
    assert out["messages"][-1].content == scenario.answer


def test_langgraph_react_agent_through_openinference(server: Server, weather_url: str) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    with instrumented(LangChainInstrumentor(), server.endpoint):
        for scenario in SCENARIOS:
            _invoke(scenario)
    check_runs(weather_url, Expected(model="scripted-1", tokens=(20, 7)))


def test_langgraph_react_agent_through_our_handler(weather_url: str, tmp_path: Any) -> None:
    for scenario in SCENARIOS:
        handler = AgentdocketHandler(weather_url, spool_dir=str(tmp_path / "spool"))
        try:
            _invoke(scenario, [handler])
        finally:
            handler.close()
    check_runs(weather_url, Expected(model="scripted-1", tokens=(20, 7)))


class CityNotes(BaseRetriever):
    """Two notes whose ids and scores live in their metadata, as many vector stores keep
    them."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [
            Document("Paris is in France.", metadata={"doc_id": "note-fr", "score": 0.92}),
            Document("Rome is in Italy.", metadata={"doc_id": "note-it", "score": 0.41}),
        ]


def test_a_retriever_tool_keeps_document_ids_and_scores(server: Server, weather_url: str) -> None:
    from langchain_core.tools import create_retriever_tool
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    search = create_retriever_tool(CityNotes(), "search_notes", "Search the city notes.")
    call = {"name": "search_notes", "args": {"query": "France"}, "id": "call_1"}
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="Paris.")])
    )
    agent = create_react_agent(model, [search], name="notes")
    with instrumented(LangChainInstrumentor(), server.endpoint):
        agent.invoke({"messages": [("user", "Which city is in France?")]})
    with open_store(weather_url) as store:
        [run] = store.reader.list_runs(agent="notes")
        trace = store.reader.read_trace(run["trace_id"])
    assert trace is not None
    assert (trace.question, trace.response) == ("Which city is in France?", "Paris.")
    [retrieval] = trace.of_kind("retrieval")
    documents = [(d["id"], d["score"]) for d in retrieval.payload["documents"]]
    assert documents == [("note-fr", 0.92), ("note-it", 0.41)]
    assert retrieval.payload["query"] == "France"


def test_a_conversation_on_one_thread_is_one_session(server: Server, weather_url: str) -> None:
    """Two turns of a checkpointed LangGraph agent on one thread: LangGraph puts the thread id
    in each run's metadata, OpenInference's instrumentation sends it as ``session.id``, and
    the two runs are one session, in order."""
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}
    model = ScriptedChatModel(
        messages=iter(
            [
                AIMessage(content="", tool_calls=[call]),
                AIMessage(content="Sunny, 21 C in Paris."),
                AIMessage(content="Yes: take sunglasses, not an umbrella."),
            ]
        )
    )
    agent = create_react_agent(model, [get_weather], name="chat", checkpointer=MemorySaver())
    config: Any = {"configurable": {"thread_id": "thread-paris"}}
    turns = [
        ("What is the weather in Paris?", "Sunny, 21 C in Paris."),
        ("So no umbrella?", "Yes: take sunglasses, not an umbrella."),
    ]
    with instrumented(LangChainInstrumentor(), server.endpoint):
        for question, answer in turns:
            out = agent.invoke({"messages": [("user", question)]}, config=config)
            assert out["messages"][-1].content == answer
    server.settled()
    with open_store(weather_url) as store:
        [session] = store.sessions.recent(agent="chat")
        assert (session["session_id"], session["turns"]) == ("thread-paris", 2)
        got = [(t["question"], t["answer"]) for t in store.sessions.turns("thread-paris")]
    assert got == turns
