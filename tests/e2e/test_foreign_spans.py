"""Spans from plain OpenTelemetry instrumentation carrying OpenInference or GenAI attributes
(current and deprecated names) become the right events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from agentdocket.events import validate_payload
from agentdocket.store import open_store
from agentdocket.tracer import StoreSpanExporter


def _foreign_trace(url: str, tmp_path: Path, keep_unrecognized: bool) -> dict[str, list[Any]]:
    exporter = StoreSpanExporter(
        url, spool_dir=tmp_path / "spool", keep_unrecognized=keep_unrecognized
    )
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    t = provider.get_tracer("someone-elses-instrumentation")
    root_attrs = {
        "openinference.span.kind": "AGENT",
        "agent.name": "calc",
        "input.value": "What is 2+2?",
        "output.value": "4",
    }
    with t.start_as_current_span("agent", attributes=root_attrs) as root:
        t.start_span(
            "ChatOpenAI",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.provider": "openai",
                "llm.invocation_parameters": json.dumps({"temperature": 0.5}),
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be brief.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "What is 2+2?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_9",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "add",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": (
                    '{"a": 2, "b": 2}'
                ),
                "llm.token_count.prompt": 21,
                "llm.token_count.completion": 9,
            },
        ).end()
        t.start_span(
            "add",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "add",
                "input.value": '{"a": 2, "b": 2}',
                "output.value": "4",
            },
        ).end()
        t.start_span(
            "retrieve",
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": "arithmetic facts",
                "retrieval.documents.0.document.id": "d1",
                "retrieval.documents.0.document.score": 0.75,
                "retrieval.documents.0.document.content": "2+2=4",
                "retrieval.documents.0.document.metadata": '{"source": "wiki"}',
                "retrieval.documents.1.document.id": "d2",
                "retrieval.documents.1.document.score": "high",  # not a number: kept as None
            },
        ).end()
        t.start_span(
            "chat claude",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "claude-x",
                "gen_ai.provider.name": "anthropic",
                "gen_ai.request.temperature": 0.0,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
                ),
                "gen_ai.usage.input_tokens": 3,
                "gen_ai.usage.output_tokens": 5,
            },
        ).end()
        old = t.start_span(
            "completion",
            attributes={
                "gen_ai.operation.name": "text_completion",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "davinci",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Say yes",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "yes",
                "gen_ai.usage.prompt_tokens": 2,
                "gen_ai.usage.completion_tokens": 1,
            },
        )
        old.end()
        failing = t.start_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": '{"q": "x"}',
            },
        )
        failing.set_status(Status(StatusCode.ERROR, "search backend timed out"))
        failing.end()
        t.start_span("format", attributes={"openinference.span.kind": "CHAIN"}).end()
        t.start_span("GET /health", attributes={"http.request.method": "GET"}).end()
        t.start_span(
            "broken plan",
            attributes={"agentdocket.kind": "plan", "output.value": '{"not": "a list"}'},
        ).end()
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    with open_store(url) as store:
        events = store.reader.events(trace_id)
    by_kind: dict[str, list[Any]] = {}
    for e in events:
        by_kind.setdefault(e.kind, []).append(e)
    by_kind["_all"] = events
    return by_kind


def _turns(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages]


def test_openinference_and_genai_spans_become_events(url: str, tmp_path: Path) -> None:
    k = _foreign_trace(url, tmp_path, keep_unrecognized=False)
    assert all(validate_payload(e.kind, e.payload) == e.payload for e in k["_all"])
    assert k["_all"][0].kind == "run.started" and k["_all"][-1].kind == "run.finished"
    started = k["run.started"][0].payload
    assert (started["agent"], started["question"]) == ("calc", "What is 2+2?")
    assert k["response"][0].payload["text"] == "4"
    assert k["run.finished"][0].payload["status"] == "ok"

    llm = {e.payload["model"]: e.payload for e in k["llm.called"]}
    gpt = llm["gpt-4o"]
    assert [m["role"] for m in gpt["input_messages"]] == ["system", "user"]
    assert gpt["output_messages"][0]["tool_calls"] == [
        {"id": "call_9", "name": "add", "arguments": {"a": 2, "b": 2}}
    ]
    assert (gpt["temperature"], gpt["input_tokens"], gpt["output_tokens"]) == (0.5, 21, 9)
    assert gpt["attributes"] == {"provider": "openai"}
    claude = llm["claude-x"]
    assert _turns(claude["input_messages"]) == [("user", "hi")]
    assert _turns(claude["output_messages"]) == [("assistant", "hello")]
    assert (claude["input_tokens"], claude["output_tokens"], claude["temperature"]) == (3, 5, 0.0)
    davinci = llm["davinci"]
    assert _turns(davinci["input_messages"]) == [("user", "Say yes")]
    assert _turns(davinci["output_messages"]) == [("assistant", "yes")]
    assert (davinci["input_tokens"], davinci["attributes"]) == (2, {"provider": "openai"})

    calls = {e.payload["tool"]: e.payload for e in k["tool.called"]}
    returns = {e.payload["tool"]: e.payload for e in k["tool.returned"]}
    assert calls["add"]["arguments"] == {"a": 2, "b": 2} and returns["add"]["result"] == 4
    assert calls["search"]["call_id"] == returns["search"]["call_id"] == "call_1"
    assert returns["search"]["error"] == "search backend timed out"

    docs = k["retrieval"][0].payload["documents"]
    assert k["retrieval"][0].payload["query"] == "arithmetic facts"
    assert docs[0] == {"id": "d1", "score": 0.75, "text": "2+2=4", "metadata": {"source": "wiki"}}
    assert (docs[1]["id"], docs[1]["score"]) == ("d2", None)

    steps = {e.payload["name"]: e.payload for e in k["step"]}
    assert set(steps) == {"format", "broken plan"}  # the HTTP span is not an agent step
    assert "must be a JSON array" in steps["broken plan"]["attributes"]["agentdocket.mapping_error"]


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_unrecognised_spans_are_kept_when_asked(url: str, tmp_path: Path) -> None:
    k = _foreign_trace(url, tmp_path, keep_unrecognized=True)
    http = next(e.payload for e in k["step"] if e.payload["name"] == "GET /health")
    assert http["attributes"] == {"http.request.method": "GET"} and http["status"] == "ok"
