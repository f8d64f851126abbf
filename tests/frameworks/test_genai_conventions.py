"""Spans built to the OpenTelemetry GenAI semantic conventions (agent spans, model spans with
``gen_ai.input.messages`` / ``gen_ai.output.messages`` parts, tool spans, and the older
event-based message form), as an agent written to the specification would emit them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

from agentdocket.store import open_store
from agentdocket.tracer import for_case
from tests.helpers.db import cli
from tests.helpers.frameworks import (
    AGENT,
    DATASET,
    INSTRUCTIONS,
    SCENARIOS,
    Expected,
    Scenario,
    check_runs,
    exporting,
    weather,
)
from tests.helpers.otlp_server import Server

TOOLS = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(provider: TracerProvider, inputs: list[Any], outputs: list[Any], events: bool) -> None:
    """A model call: its messages as span attributes, or (``events``) as the older form's
    span events."""
    tracer = provider.get_tracer("genai-agent")
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "scripted-1",
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.tool.definitions": json.dumps(TOOLS),
    }
    if not events:
        attributes["gen_ai.system_instructions"] = json.dumps(
            [{"type": "text", "content": INSTRUCTIONS}]
        )
        attributes["gen_ai.input.messages"] = json.dumps(inputs)
        attributes["gen_ai.output.messages"] = json.dumps(outputs)
    with tracer.start_as_current_span("chat scripted-1", attributes=attributes) as span:
        if events:
            span.add_event("gen_ai.system.message", {"content": INSTRUCTIONS})
            for m in inputs:
                if m["role"] == "user" and m["parts"][0]["type"] == "text":
                    span.add_event("gen_ai.user.message", {"content": m["parts"][0]["content"]})
                elif m["role"] == "assistant":
                    call = m["parts"][0]
                    function = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
                    span.add_event(
                        "gen_ai.assistant.message",
                        {"tool_calls": json.dumps([{"id": call["id"], "function": function}])},
                    )
                else:
                    part = m["parts"][0]
                    span.add_event(
                        "gen_ai.tool.message", {"content": part["response"], "id": part["id"]}
                    )
            for m in outputs:
                part = m["parts"][0]
                if part["type"] == "text":
                    message: dict[str, Any] = {"role": "assistant", "content": part["content"]}
                else:
                    function = {"name": part["name"], "arguments": json.dumps(part["arguments"])}
                    message = {
                        "role": "assistant",
                        "tool_calls": [{"id": part["id"], "function": function}],
                    }
                span.add_event(
                    "gen_ai.choice",
                    {"index": 0, "finish_reason": "stop", "message": json.dumps(message)},
                )


def _run(provider: TracerProvider, scenario: Scenario, events: bool) -> None:
    tracer = provider.get_tracer("genai-agent")
    root = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT,
        "gen_ai.conversation.id": f"conv-{scenario.name}",
    }
    call = {
        "type": "tool_call",
        "id": "call_1",
        "name": "get_weather",
        "arguments": {"city": scenario.called},
    }
    with tracer.start_as_current_span(f"invoke_agent {AGENT}", attributes=root):
        question = _text("user", scenario.question)
        _chat(provider, [question], [{"role": "assistant", "parts": [call]}], events)
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"city": scenario.called}),
        }
        with tracer.start_as_current_span(
            "execute_tool get_weather",
            attributes=tool,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = weather(scenario.called)
                span.set_attribute("gen_ai.tool.call.result", result)
            except ValueError as exc:  # recorded as the conventions say: an exception event
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR))  # no description
                result = str(exc)
        returned = {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}],
        }
        _chat(
            provider,
            [question, {"role": "assistant", "parts": [call]}, returned],
            [_text("assistant", scenario.answer)],
            events,
        )


def _embeddings(provider: TracerProvider) -> None:
    """A trace that is no agent run: one embeddings call (indexing documents)."""
    tracer = provider.get_tracer("genai-agent")
    attributes = {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "embed-1"}
    tracer.start_span("embeddings embed-1", attributes=attributes).end()


@pytest.mark.parametrize("grpc", [False, True], ids=["http", "grpc"])
def test_spans_built_to_the_genai_conventions(server: Server, weather_url: str, grpc: bool) -> None:
    endpoint = server.grpc_endpoint if grpc else server.endpoint
    with exporting(endpoint, grpc=grpc) as provider:
        for scenario in SCENARIOS:
            with for_case(DATASET, scenario.case_id):
                _run(provider, scenario, events=False)
        _embeddings(provider)
    traces = check_runs(weather_url, Expected(model="scripted-1", tokens=(20, 7)))
    for trace in traces.values():
        started = trace.started
        assert started is not None
        assert started.attributes["conversation_id"].startswith("conv-")
        first, second = (e.payload for e in trace.of_kind("llm.called"))
        system = first["input_messages"][0]
        assert (system["role"], system["content"]) == ("system", INSTRUCTIONS)
        assert first["attributes"]["tool_definitions"] == TOOLS
        # the tool's result handed back to the model is a tool message with its text
        tool_message = second["input_messages"][-1]
        assert tool_message["role"] == "tool" and tool_message["content"]
    # runs of one conversation are listed together
    listed = json.loads(
        cli(weather_url, "runs", "list", "--conversation", "conv-correct", "--format", "json")
    )
    assert [r["trace_id"] for r in listed["runs"]] == [traces["correct"].trace_id]
    failing = traces["failing-tool"].tool_calls()[0]
    assert failing.error == "ValueError: no weather station in Atlantis"
    with open_store(weather_url) as store:
        assert len(store.reader.list_runs(limit=None)) == len(SCENARIOS)  # the embeddings: no run,
        [(stored,)] = store.recorder.read("SELECT count(DISTINCT trace_id) FROM events")
    assert stored == len(SCENARIOS) + 1  # but stored


def test_the_older_event_form_of_messages(server: Server, weather_url: str) -> None:
    with exporting(server.endpoint) as provider:
        for scenario in SCENARIOS:
            with for_case(DATASET, scenario.case_id):
                _run(provider, scenario, events=True)
    traces = check_runs(weather_url, Expected(model="scripted-1", tokens=(20, 7)))
    second = traces["correct"].of_kind("llm.called")[1].payload
    assert [m["role"] for m in second["input_messages"]] == ["system", "user", "assistant", "tool"]
    assert second["input_messages"][2]["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}
    ]
