"""The span mapping's readings of values: questions and answers, never a framework's wrapper;
the agent's name; messages in the GenAI conventions' older event form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanContext

from agentdocket.ingest.agents import fallback_name, names_below_roots, own_name
from agentdocket.ingest.messages import answer_text, event_messages, is_printout, question_text


def test_questions_and_answers_are_text_never_a_wrapper() -> None:
    assert question_text("What is 2+2?") == "What is 2+2?"
    assert question_text({"messages": [["user", "Weather in Paris?"]]}) == "Weather in Paris?"
    assert question_text({"input": "hi", "chat_history": []}) == "hi"
    # LlamaIndex's workflow state, and printouts of objects, are no question
    assert question_text({"init_state": {"is_running": False}, "start_event": "x"}) is None
    assert question_text("<workflows.context.Context object at 0x7f05a>") is None
    assert answer_text("StopEvent(result=AgentOutput(response=...))") is None
    assert answer_text("AIMessage(content='hi', additional_kwargs={})") is None
    assert answer_text({"output": "4"}) == "4"
    assert answer_text({"city": "Paris", "temperature": 18}) == '{"city":"Paris","temperature":18}'
    assert answer_text("   ") is None
    # prose that merely starts like a call stays prose
    assert not is_printout("Paris(France) is sunny")
    assert is_printout("ToolCallResult(tool_name='get_weather')")


@dataclass
class _Span:
    name: str
    span_id: int
    parent_id: int | None
    attributes: dict[str, Any] = field(default_factory=dict)
    start_time: int = 0

    @property
    def context(self) -> SpanContext:
        return SpanContext(trace_id=1, span_id=self.span_id, is_remote=False)

    @property
    def parent(self) -> SpanContext | None:
        if self.parent_id is None:
            return None
        return SpanContext(trace_id=1, span_id=self.parent_id, is_remote=False)


def test_the_agent_is_named_by_the_nearest_agent_span() -> None:
    agent = {"openinference.span.kind": "AGENT"}
    spans = [
        _Span("Agent workflow", 1, None, dict(agent)),
        _Span("turn", 2, 1, {"openinference.span.kind": "CHAIN"}),
        _Span("weather", 3, 1, {**agent, "agent.name": "weather"}, start_time=5),
        _Span("deeper", 4, 2, {**agent, "agent.name": "deeper"}),
    ]
    assert names_below_roots(spans) == {(1, 1): "weather"}  # depth 1 before depth 2
    assert own_name("invoke_agent planner", {}, {}) == "planner"
    assert own_name("x", {"gen_ai.agent.name": "a"}, {}) == "a"
    assert own_name("x", {}, {"agentdocket.agent": "m"}) == "m"
    assert fallback_name("weather", {"service.name": "svc"}) == "weather"
    assert fallback_name("FunctionAgent.run", {"service.name": "svc"}) == "svc"
    assert fallback_name("LangGraph", {"service.name": "unknown_service:python"}) == "LangGraph"


def test_a_run_that_names_no_agent_is_named_by_its_service() -> None:
    """A root whose name is code (a dotted path) or its own GenAI operation names no agent:
    the service does, where it is not the SDK's default."""
    svc = {"service.name": "weather"}
    # OpenLLMetry's LlamaIndex root; a module path (Haystack's own tracing names its agent
    # span haystack.agent.run)
    assert fallback_name("FunctionAgent.workflow", svc) == "weather"
    assert fallback_name("haystack.agent.run", svc) == "weather"
    # the GenAI conventions' agent span when the agent has no name
    assert fallback_name("invoke_agent", svc) == "weather"
    assert fallback_name("invoke_agent", {**svc, "gen_ai.operation.name": "invoke_agent"}) == (
        "weather"
    )
    assert fallback_name("chat", {**svc, "gen_ai.operation.name": "chat"}) == "weather"
    # a root named otherwise is named by its name; the default service names nothing
    assert fallback_name("weather agent", {"service.name": "svc"}) == "weather agent"
    assert fallback_name("invoke_agent", {"service.name": "unknown_service"}) == "invoke_agent"


@dataclass
class _Event:
    name: str
    attributes: dict[str, Any]


def test_messages_in_the_older_event_form() -> None:
    inputs, outputs = event_messages(
        [
            _Event("gen_ai.system.message", {"content": "Be brief."}),
            _Event("gen_ai.user.message", {"content": "Weather in Paris?"}),
            _Event(
                "gen_ai.assistant.message",
                {"tool_calls": '[{"id": "c1", "function": {"name": "w", "arguments": "{}"}}]'},
            ),
            _Event("gen_ai.tool.message", {"content": "18 C", "id": "c1"}),
            _Event("gen_ai.choice", {"message": '{"role": "assistant", "content": "18 C."}'}),
            _Event("exception", {"exception.message": "not a message"}),
        ]
    )
    assert [(m["role"], m["content"]) for m in inputs] == [
        ("system", "Be brief."),
        ("user", "Weather in Paris?"),
        ("assistant", ""),
        ("tool", "18 C"),
    ]
    assert inputs[2]["tool_calls"] == [{"name": "w", "arguments": {}, "id": "c1"}]
    assert outputs == [{"role": "assistant", "content": "18 C."}]
