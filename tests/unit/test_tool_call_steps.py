"""A chain, workflow or task span that records a tool call (it names the tool and carries its
input) is a tool call; one that only mentions a tool, or only has an input, stays a step."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from agentdocket.ingest.mapping import spans_to_events


def _span(name: str, span_id: int, parent: int | None, attrs: dict[str, Any]) -> ReadableSpan:
    def ctx(i: int) -> SpanContext:
        return SpanContext(trace_id=7, span_id=i, is_remote=False)

    return ReadableSpan(
        name=name,
        context=ctx(span_id),
        parent=ctx(parent) if parent is not None else None,
        attributes=attrs,
        start_time=span_id * 1000,
        end_time=span_id * 1000 + 500,
    )


def _kinds(attrs: dict[str, Any], *, root: bool = False) -> list[str]:
    spans = [_span("FunctionAgent.workflow", 1, None, {"traceloop.span.kind": "workflow"})]
    if root:
        spans = [_span("call", 1, None, attrs)]
    else:
        spans.append(_span("BaseWorkflowAgent.task", 2, 1, attrs))
    events = spans_to_events(spans)
    return [e.kind for e in events if e.span_id == format(spans[-1].context.span_id, "016x")]


TASK = {"traceloop.span.kind": "task"}
CHAIN = {"openinference.span.kind": "CHAIN"}


def test_a_task_span_naming_a_tool_with_its_input_is_the_tool_call() -> None:
    attrs = {**TASK, "tool.name": "get_weather", "tool.arguments": '{"city": "Paris"}'}
    assert _kinds(attrs) == ["tool.called", "tool.returned"]
    [called] = [
        e
        for e in spans_to_events(
            [
                _span("FunctionAgent.workflow", 1, None, {"traceloop.span.kind": "workflow"}),
                _span("BaseWorkflowAgent.task", 2, 1, attrs),
            ]
        )
        if e.kind == "tool.called"
    ]
    assert (called.payload["tool"], called.payload["arguments"]) == (
        "get_weather",
        {"city": "Paris"},
    )
    # OpenInference's chain span with a tool's name and input
    chain = {**CHAIN, "tool.name": "get_weather", "input.value": '{"city": "Paris"}'}
    assert _kinds(chain) == ["tool.called", "tool.returned"]


def test_a_chain_that_only_mentions_a_tool_or_only_has_input_stays_a_step() -> None:
    assert _kinds({**TASK, "tool.name": "get_weather"}) == ["step"]
    assert _kinds({**CHAIN, "input.value": '{"city": "Paris"}'}) == ["step"]
    assert _kinds({**TASK, "traceloop.entity.input": '{"city": "Paris"}'}) == ["step"]


def test_a_root_naming_a_tool_is_still_the_run() -> None:
    attrs = {**CHAIN, "tool.name": "get_weather", "input.value": "What is the weather?"}
    assert _kinds(attrs, root=True)[0] == "run.started"
