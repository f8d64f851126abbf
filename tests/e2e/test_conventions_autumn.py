"""The GenAI conventions of autumn 2026 (semantic-conventions-genai), each read as
``docs/recording/conventions.md`` says. Where an instrumentation emits a convention, its spans
are real (the ``openai-genai-1.3`` capture, OpenInference's own tracer); where none does yet,
the spans are built here from the specification, with the OpenTelemetry SDK, under the names
the specification gives (the PR each comes from is named at its test). The mapping reads them
as the exporter does; the last tests send them through ``agentdocket serve``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Tracer, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agentdocket.events import Trace
from agentdocket.ingest import decisions
from agentdocket.ingest.mapping import spans_to_events
from agentdocket.store import open_store
from tests.helpers.captures import replay
from tests.helpers.otlp_server import Server

OP = "gen_ai.operation.name"


def _mapped(build: Callable[[Tracer], None]) -> Trace:
    """The trace the mapping makes of the spans ``build`` records (one trace)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "planner-svc"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("spec-built"))
    provider.shutdown()
    return Trace.from_events(spans_to_events(exporter.get_finished_spans()))


def _messages(role: str, text: str | None = None, **call: Any) -> str:
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"type": "text", "content": text})
    if call:
        parts.append({"type": "tool_call", **call})
    return json.dumps([{"role": role, "parts": parts}])


def _chat(tracer: Tracer, reply: str, **more: Any) -> None:
    attributes = {
        OP: "chat",
        "gen_ai.request.model": "scripted-1",
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.input.messages": _messages("user", "Plan a day in Paris"),
        "gen_ai.output.messages": reply,
        **more,
    }
    tracer.start_span("chat scripted-1", attributes=attributes).end()


def _steps(trace: Trace) -> list[str]:
    return [e.payload["name"] for e in trace.of_kind("step")]


# --- #440: gen_ai.usage.cache_creation.input_tokens renamed cache_write --------------------------


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ({"gen_ai.usage.cache_write.input_tokens": 25}, 25),
        ({"gen_ai.usage.cache_creation.input_tokens": 30}, 30),  # Strands, Pydantic AI
        ({"gen_ai.usage.cache_write_input_tokens": 35}, 35),  # Strands' flat default
        # a span carrying both (a dual write): the new name first
        (
            {
                "gen_ai.usage.cache_write.input_tokens": 25,
                "gen_ai.usage.cache_creation.input_tokens": 99,
            },
            25,
        ),
    ],
)
def test_cache_write_tokens_are_read_under_both_names(given: dict[str, int], read: int) -> None:
    trace = _mapped(lambda t: _chat(t, _messages("assistant", "ok"), **given))
    [call] = trace.of_kind("llm.called")
    assert call.payload["cache_creation_tokens"] == read


def test_openinference_genai_mirror_writes_the_old_cache_name_and_it_is_read() -> None:
    """Real: OpenInference's tracer (openinference-instrumentation 0.1.72) with
    ``enable_genai_semconv`` mirrors its token counts into the GenAI names, the cache write
    still as ``gen_ai.usage.cache_creation.input_tokens``."""
    from openinference.instrumentation import OITracer, TraceConfig

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OITracer(provider.get_tracer("oi"), config=TraceConfig(enable_genai_semconv=True))
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "scripted-1",
        "llm.token_count.prompt": 50,
        "llm.token_count.completion": 10,
        "llm.token_count.prompt_details.cache_write": 40,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "ok",
    }
    tracer.start_span("ChatModel", attributes=attributes).end()
    provider.shutdown()
    [span] = exporter.get_finished_spans()
    assert span.attributes is not None
    assert span.attributes["gen_ai.usage.cache_creation.input_tokens"] == 40
    assert "gen_ai.usage.cache_write.input_tokens" not in span.attributes
    [call] = Trace.from_events(spans_to_events([span])).of_kind("llm.called")
    assert call.payload["cache_creation_tokens"] == 40


# what the real instrumentation reported, call by call, for each run (openai-genai-1.3's
# scripted model writes the prompt to its cache on a run's first call, reads it on the second)
def test_the_renamed_cache_write_is_read_on_real_spans(sqlite_url: str) -> None:
    replay(sqlite_url, "openai-genai-1.3")
    with open_store(sqlite_url) as store:
        runs = store.reader.list_runs(limit=None)
        assert len(runs) == 3
        for run in runs:
            trace = store.reader.read_trace(run["trace_id"])
            assert trace is not None
            calls = trace.of_kind("llm.called")
            written = [e.payload.get("cache_creation_tokens") for e in calls]
            assert written == [48, None], run["trace_id"]
            assert [e.payload.get("cache_read_tokens") for e in calls] == [None, 48]


def test_the_details_record_alone_gives_the_calls_messages_on_real_spans(sqlite_url: str) -> None:
    """#579 made ``gen_ai.client.inference.operation.details`` recommended; the 1.3
    instrumentation, content set to events only, puts the messages in it and none on its
    spans: the call's messages, the plan and the question come from the record (no change
    needed)."""
    replay(sqlite_url, "openai-genai-1.3", reverse=True)  # the records before their spans
    with open_store(sqlite_url) as store:
        for run in store.reader.list_runs(limit=None):
            trace = store.reader.read_trace(run["trace_id"])
            assert trace is not None
            assert all(not e.payload["input_messages"] for e in trace.of_kind("llm.called"))
            assert len(trace.of_kind("llm.messages")) == 2
            assert [p.tool for p in trace.plan()] == ["get_weather"]
            assert trace.question in (
                "What is the weather in Paris?",
                "What is the weather in Atlantis?",
            )


def test_a_details_event_without_content_only_adds_what_the_span_lacks() -> None:
    """Spec-built: the event (now on by default) with usage and model and no messages, as a
    span event of a call whose span says nothing else."""

    def build(tracer: Tracer) -> None:
        span = tracer.start_span("chat scripted-1", attributes={OP: "chat"})
        span.add_event(
            "gen_ai.client.inference.operation.details",
            {
                OP: "chat",
                "gen_ai.request.model": "scripted-1",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 3,
                "gen_ai.usage.cache_write.input_tokens": 8,
            },
        )
        span.end()

    [call] = _mapped(build).of_kind("llm.called")
    assert (call.payload["model"], call.payload["input_tokens"]) == ("scripted-1", 12)
    assert call.payload["cache_creation_tokens"] == 8
    assert call.payload["input_messages"] == [] and call.payload["output_messages"] == []


# --- #571: gen_ai.invocation.internal (invoke_agent, invoke_workflow, handle_conversation_turn)


def test_a_conversation_turn_is_the_run_and_the_invocations_below_it_are_steps() -> None:
    def build(tracer: Tracer) -> None:
        turn = {OP: "handle_conversation_turn", "gen_ai.workflow.name": "trip_desk"}
        with tracer.start_as_current_span("handle_conversation_turn trip_desk", attributes=turn):
            agent = {OP: "invoke_agent", "gen_ai.agent.name": "planner"}
            with tracer.start_as_current_span("invoke_agent planner", attributes=agent):
                _chat(tracer, _messages("assistant", "Louvre, then lunch."))
            workflow = {OP: "invoke_workflow", "gen_ai.workflow.name": "booking"}
            tracer.start_span("invoke_workflow booking", attributes=workflow).end()

    trace = _mapped(build)
    [started] = trace.of_kind("run.started")
    assert started.payload["agent"] == "trip_desk"  # its entry point's (gen_ai.workflow.name)
    assert trace.question == "Plan a day in Paris"  # from its model call
    assert trace.response == "Louvre, then lunch."
    assert _steps(trace) == ["invoke_agent planner", "invoke_workflow booking"]


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("handle_conversation_turn concierge", "concierge"),
        ("invoke_workflow booking", "booking"),
        ("invoke_agent planner", "planner"),
    ],
)
def test_an_invocation_names_its_agent_in_its_span_name(name: str, agent: str) -> None:
    operation = name.split(" ")[0]
    trace = _mapped(lambda t: t.start_span(name, attributes={OP: operation}).end())
    [started] = trace.of_kind("run.started")
    assert started.payload["agent"] == agent


# --- #188: run_step ------------------------------------------------------------------------------


def test_a_run_step_is_a_step_named_by_its_step_name() -> None:
    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "invoke_workflow router", attributes={OP: "invoke_workflow"}
        ):
            step = {OP: "run_step", "gen_ai.step.name": "route_query"}
            tracer.start_span("run_step route_query", attributes=step).end()
            tracer.start_span("run_step", attributes={OP: "run_step"}).end()  # unnamed

    trace = _mapped(build)
    assert _steps(trace) == ["route_query", "run_step"]
    assert len(trace.of_kind("run.started")) == 1  # never a run


# --- #97: plan -----------------------------------------------------------------------------------


PLAN_TEXT = "1. Visit the Louvre\n2. Lunch at Le Procope\n3. Walk along the Seine"


def test_a_plan_span_is_the_plan_its_model_call_wrote() -> None:
    """As the specification's reference scenario (LangChain's plan-and-execute) has it: a
    ``plan`` span around the planner's model call, whose reply is the plan in words."""

    def build(tracer: Tracer) -> None:
        root = {OP: "invoke_agent", "gen_ai.agent.name": "planner"}
        with tracer.start_as_current_span("invoke_agent planner", attributes=root):
            plan = {OP: "plan", "gen_ai.agent.name": "planner"}
            with tracer.start_as_current_span("plan planner", attributes=plan):
                _chat(tracer, _messages("assistant", PLAN_TEXT))

    trace = _mapped(build)
    assert [(p.tool, p.text) for p in trace.plan()] == [(None, PLAN_TEXT)]
    assert _steps(trace) == []  # the plan span is the plan, not a generic step


def test_a_plan_whose_model_call_asks_for_tools_is_counted_once() -> None:
    def build(tracer: Tracer) -> None:
        reply = _messages("assistant", id="call_1", name="get_weather", arguments={"city": "Paris"})
        with (
            tracer.start_as_current_span("invoke_agent planner", attributes={OP: "invoke_agent"}),
            tracer.start_as_current_span("plan", attributes={OP: "plan"}),
        ):
            _chat(tracer, reply)

    trace = _mapped(build)
    assert [(p.tool, p.arguments, p.call_id) for p in trace.plan()] == [
        ("get_weather", {"city": "Paris"}, "call_1")
    ]


# --- #140: memory operations ---------------------------------------------------------------------


def test_a_memory_search_is_a_retrieval_of_its_records() -> None:
    records = [
        {"id": "m1", "score": 0.92, "content": "User prefers window seats", "metadata": {}},
        {"id": "m2", "score": 0.4, "content": {"likes": ["museums"]}},
    ]

    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "invoke_agent concierge", attributes={OP: "invoke_agent"}
        ):
            search = {
                OP: "search_memory",
                "gen_ai.memory.store.id": "prefs",
                "gen_ai.memory.query.text": "seat preference",
                "gen_ai.memory.record.count": 2,
                "gen_ai.memory.records": json.dumps(records),
            }
            tracer.start_span("search_memory", kind=SpanKind.CLIENT, attributes=search).end()
            found = {
                OP: "retrieval",
                "gen_ai.retrieval.query.text": "Louvre hours",
                "gen_ai.retrieval.documents": json.dumps([{"id": "doc-7", "score": 0.8}]),
            }
            tracer.start_span("retrieval guides", attributes=found).end()
            for op in ("create_memory", "upsert_memory", "delete_memory_store"):
                memory = {OP: op, "gen_ai.memory.store.id": "prefs"}
                tracer.start_span(op, kind=SpanKind.CLIENT, attributes=memory).end()

    trace = _mapped(build)
    searched, retrieved = (e.payload for e in trace.of_kind("retrieval"))
    assert searched["query"] == "seat preference"
    assert [(d["id"], d["score"], d["text"]) for d in searched["documents"]] == [
        ("m1", 0.92, "User prefers window seats"),
        ("m2", 0.4, '{"likes":["museums"]}'),
    ]
    assert (retrieved["query"], [d["id"] for d in retrieved["documents"]]) == (
        "Louvre hours",
        ["doc-7"],
    )
    steps = trace.of_kind("step")
    assert [e.payload["name"] for e in steps] == [
        "create_memory",
        "upsert_memory",
        "delete_memory_store",
    ]
    assert all(e.payload["attributes"]["gen_ai.memory.store.id"] == "prefs" for e in steps)


# --- #427 (open): guardrails ---------------------------------------------------------------------


GUARDRAIL_RESULT = {
    "gen_ai.guardrail.component.name": "content_filter",
    "gen_ai.guardrail.result.type": "action",
    "gen_ai.guardrail.result.value": "GUARDRAIL_INTERVENED",
    "gen_ai.guardrail.risk.category": "PROMPT_ATTACK",
    "gen_ai.guardrail.risk.score": 0.87,
    "gen_ai.guardrail.source": "INPUT",
    "gen_ai.guardrail.result.reason": "instructions to ignore the system prompt",
}


def _guarded(tracer: Tracer) -> None:
    with tracer.start_as_current_span("invoke_agent concierge", attributes={OP: "invoke_agent"}):
        guardrail = {
            OP: "apply_guardrail",
            "gen_ai.provider.name": "aws.bedrock",
            "gen_ai.guardrail.component.name": "content_filter",
        }
        with tracer.start_as_current_span(
            "apply_guardrail content_filter", kind=SpanKind.CLIENT, attributes=guardrail
        ) as span:
            span.add_event("gen_ai.guardrail.result", GUARDRAIL_RESULT)


def test_a_guardrails_result_is_an_external_verdict_of_the_run_and_its_span_a_step() -> None:
    trace = _mapped(_guarded)
    assert _steps(trace) == ["apply_guardrail content_filter"]
    [verdict] = trace.verdicts()
    assert verdict.scorer == "external.guardrail.content_filter"
    assert verdict.scorer_version == "external"
    assert verdict.label == "action=GUARDRAIL_INTERVENED"
    assert (verdict.score, verdict.passed) == (0.87, None)  # never a derived pass or fail
    assert verdict.rationale == "instructions to ignore the system prompt"
    assert verdict.subject_span_id is None  # about the run
    assert verdict.details["gen_ai.guardrail.risk.category"] == "PROMPT_ATTACK"


# --- #195 (open): A2A ----------------------------------------------------------------------------


def test_a2a_calls_are_steps_and_a_server_root_is_the_remote_agents_run() -> None:
    def client_side(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "invoke_agent concierge", attributes={OP: "invoke_agent"}
        ):
            call = {
                "a2a.method.name": "SendMessage",
                "a2a.protocol.version": "1.0",
                "gen_ai.agent.name": "booking_agent",
                "gen_ai.conversation.id": "ctx-1",
                "server.address": "booking.example",
            }
            tracer.start_span("SendMessage", kind=SpanKind.CLIENT, attributes=call).end()

    def server_side(tracer: Tracer) -> None:
        served = {
            "a2a.method.name": "SendMessage",
            "a2a.task.id": "task-9",
            "a2a.task.state": "TASK_STATE_COMPLETED",
            "gen_ai.agent.name": "booking_agent",
        }
        with tracer.start_as_current_span("SendMessage", kind=SpanKind.SERVER, attributes=served):
            agent = {OP: "invoke_agent", "gen_ai.agent.name": "booking_agent"}
            with tracer.start_as_current_span("invoke_agent booking_agent", attributes=agent):
                _chat(tracer, _messages("assistant", "Booked: table for two at 20:00."))

    client = _mapped(client_side)
    [started] = client.of_kind("run.started")
    assert started.payload["agent"] != "booking_agent"  # the caller's run
    [step] = client.of_kind("step")
    assert step.payload["name"] == "SendMessage"
    assert step.payload["attributes"]["gen_ai.agent.name"] == "booking_agent"

    server = _mapped(server_side)  # not lost: the request is the remote agent's run
    [started] = server.of_kind("run.started")
    assert started.payload["agent"] == "booking_agent"
    assert server.response == "Booked: table for two at 20:00."
    assert _steps(server) == ["invoke_agent booking_agent"]


# --- #535 (open): tool-call decisions ------------------------------------------------------------


def _decided(tracer: Tracer, approved_later: bool = False) -> None:
    with tracer.start_as_current_span("invoke_agent ops", attributes={OP: "invoke_agent"}) as root:
        reply = json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": "call_1",
                            "name": "get_weather",
                            "arguments": {"city": "Paris"},
                        },
                        {
                            "type": "tool_call",
                            "id": "call_2",
                            "name": "delete_files",
                            "arguments": {"path": "/"},
                        },
                    ],
                }
            ]
        )
        _chat(tracer, reply)
        # call_2 is suspended for approval, then denied (or approved: it runs)
        decisions = [
            ("call_1", "get_weather", "allow"),
            ("call_2", "delete_files", "require_approval"),
        ]
        if not approved_later:
            decisions.append(("call_2", "delete_files", "deny"))
        for call_id, tool, outcome in decisions:
            root.add_event(
                "gen_ai.tool.call.decision",
                {
                    "gen_ai.tool.call.decision.outcome": outcome,
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.name": tool,
                },
            )
        ran = [("call_1", "get_weather")] + ([("call_2", "delete_files")] if approved_later else [])
        for call_id, tool in ran:
            tool_span = {
                OP: "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.result": "done",
            }
            tracer.start_span(f"execute_tool {tool}", attributes=tool_span).end()


def test_a_denied_tool_call_is_a_call_that_did_not_run() -> None:
    found = _mapped(_decided).tool_calls()
    # each once, however many decisions; in time order (call_2 was denied before call_1 ran)
    assert [c.call_id for c in found] == ["call_2", "call_1"]
    calls = {c.call_id: c for c in found}
    allowed, denied = calls["call_1"], calls["call_2"]
    assert (allowed.decision, allowed.status, allowed.result) == ("allow", "ok", "done")
    assert (denied.decision, denied.status, denied.returned) == ("deny", "denied", False)
    assert denied.error is None  # not an error
    assert (denied.tool, denied.arguments) == ("delete_files", {"path": "/"})  # the model's


def test_a_call_that_waited_for_approval_and_then_ran_is_counted_once() -> None:
    trace = _mapped(lambda t: _decided(t, approved_later=True))
    calls = trace.tool_calls()
    assert [(c.call_id, c.status) for c in calls] == [("call_1", "ok"), ("call_2", "ok")]
    assert calls[1].decision == "require_approval"
    assert [a.call_id for a in trace.call_arguments()] == ["call_1", "call_2"]
    # as a scorer reads it: only the kinds it declares (no decision steps)
    kinds = ("plan", "tool.called")
    partial = Trace.partial(trace.trace_id, [e for e in trace.events if e.kind in kinds])
    assert [a.call_id for a in partial.call_arguments()] == ["call_1", "call_2"]


def test_decisions_of_unexpected_shapes_are_kept_not_fatal() -> None:
    """Attribute values of any type (an outcome sent as an array, a score as text): the
    decision is kept as a step, the guardrail's result as a verdict without a score."""

    def build(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "invoke_agent ops", attributes={OP: "invoke_agent"}
        ) as root:
            root.add_event(
                "gen_ai.tool.call.decision",
                {"gen_ai.tool.call.decision.outcome": ["deny"], "gen_ai.tool.call.id": "c1"},
            )
            root.add_event(
                "gen_ai.guardrail.result",
                {"gen_ai.guardrail.result.value": "6", "gen_ai.guardrail.risk.score": "high"},
            )

    trace = _mapped(build)
    assert _steps(trace) == ["gen_ai.tool.call.decision"]
    assert trace.tool_calls() == []
    # as the receiver decodes an array (a list, unhashable)
    received = {"gen_ai.tool.call.decision.outcome": ["deny"], "gen_ai.tool.call.id": "c1"}
    made = decisions.events_of("gen_ai.tool.call.decision", "ab" * 16, "cd" * 8, received, 1)
    assert [e.kind for e in made] == ["step"]
    [verdict] = trace.verdicts()
    assert (verdict.scorer, verdict.label, verdict.score) == ("external.guardrail", "6", None)


# --- through the receiver ------------------------------------------------------------------------


@pytest.fixture
def server(sqlite_url: str, tmp_path: Path) -> Iterator[Server]:
    s = Server(sqlite_url, tmp_path / "spool").start()
    yield s
    s.stop()


def test_guardrails_and_decisions_as_log_records_through_the_receiver(
    server: Server, sqlite_url: str
) -> None:
    """End to end: the stock OTLP exporters to ``agentdocket serve`` on SQLite, a guardrail's
    result and a tool call's decision sent as log records (as the specification's reference
    scenarios emit them), a plan span and a memory search as spans."""
    resource = Resource.create({"service.name": "ops-svc"})
    spans, logs = TracerProvider(resource=resource), LoggerProvider(resource=resource)
    spans.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=server.endpoint)))
    logs_endpoint = server.endpoint.replace("/v1/traces", "/v1/logs")
    logs.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=logs_endpoint)))
    tracer, logger = spans.get_tracer("ops"), logs.get_logger("ops")
    with tracer.start_as_current_span(
        "handle_conversation_turn ops", attributes={OP: "handle_conversation_turn"}
    ) as root:
        with tracer.start_as_current_span("plan ops", attributes={OP: "plan"}):
            _chat(tracer, _messages("assistant", id="call_9", name="rm", arguments={"path": "/"}))
        guardrail = {OP: "apply_guardrail", "gen_ai.provider.name": "azure.ai.content_safety"}
        with tracer.start_as_current_span(
            "apply_guardrail", kind=SpanKind.CLIENT, attributes=guardrail
        ) as guard:
            logger.emit(event_name="gen_ai.guardrail.result", attributes=GUARDRAIL_RESULT)
        logger.emit(
            event_name="gen_ai.tool.call.decision",
            attributes={
                "gen_ai.tool.call.decision.outcome": "deny",
                "gen_ai.tool.call.id": "call_9",
                "gen_ai.tool.name": "rm",
            },
        )
        trace_id = format(root.get_span_context().trace_id, "032x")
    logs.shutdown()
    spans.shutdown()
    server.settled()
    with open_store(sqlite_url) as store:
        trace = store.reader.read_trace(trace_id)
        [run] = store.reader.list_runs(limit=None)
    assert trace is not None
    assert run["agent"] == "ops"
    assert [(p.tool, p.call_id) for p in trace.plan()] == [("rm", "call_9")]
    [call] = trace.tool_calls()
    assert (call.call_id, call.status, call.arguments, call.error) == (
        "call_9",
        "denied",
        {"path": "/"},
        None,
    )
    [verdict] = trace.verdicts()
    assert (verdict.scorer, verdict.label, verdict.score) == (
        "external.guardrail.content_filter",
        "action=GUARDRAIL_INTERVENED",
        0.87,
    )
    assert verdict.details["span_id"] == format(guard.get_span_context().span_id, "016x")
    assert verdict.passed is None
