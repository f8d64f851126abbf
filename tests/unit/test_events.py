"""The event model: identity, validation with named places, schemas, upcasting, traces."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import datetime

import pytest

from agentdocket.events import (
    PAYLOAD_TYPES,
    Event,
    PayloadError,
    Plan,
    PlanStep,
    Response,
    Trace,
    Verdict,
    event_id_for,
    json_schema,
    register_upcaster,
    unregister_upcaster,
    validate_payload,
)
from agentdocket.events.codec import from_json, to_json
from agentdocket.events.model import EVENT_NAMESPACE
from tests.helpers.factory import run_events

TID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


def test_event_id_is_derived_from_identity() -> None:
    a = Event.create(trace_id=TID, span_id=SPAN, seq=3, payload=Response(text="x"))
    b = Event.create(trace_id=TID, span_id=SPAN, seq=9, payload=Response(text="other"))
    c = Event.create(trace_id=TID, span_id=SPAN, seq=3, payload=Response(text="x"), index=1)
    assert a.event_id == b.event_id == event_id_for(TID, SPAN, "response", 0)
    assert c.event_id != a.event_id


def test_event_id_is_the_uuid5_of_its_identity() -> None:
    """event_id_for makes the UUID from its integer, without UUID's constructor: it must be
    uuid5's in every respect."""
    rng = random.Random(5)
    for index in range(200):
        trace = f"{rng.getrandbits(128):032x}"
        span = f"{rng.getrandbits(64):016x}"
        made = event_id_for(trace, span, "tool.called", index)
        known = uuid.uuid5(EVENT_NAMESPACE, f"{trace}/{span}/tool.called/{index}")
        assert made == known and made.int == known.int and hash(made) == hash(known)
        assert (str(made), made.bytes, made.version, made.variant) == (
            str(known),
            known.bytes,
            known.version,
            known.variant,
        )
        assert made.is_safe == known.is_safe and type(made) is uuid.UUID


def test_timestamps_are_utc_and_must_be_aware() -> None:
    e = Event.create(
        trace_id=TID,
        span_id=SPAN,
        seq=0,
        payload=Response(text="x"),
        ts=datetime.fromisoformat("2026-01-01T02:00:00.123456+02:00"),
    )
    offset = e.ts.utcoffset()
    assert offset is not None and offset.total_seconds() == 0
    assert (e.ts.hour, e.ts.microsecond) == (0, 123456)
    with pytest.raises(ValueError, match="no time zone"):
        Event.create(
            trace_id=TID, span_id=SPAN, seq=0, payload=Response(text="x"), ts=datetime(2026, 1, 1)
        )


@pytest.mark.parametrize(
    ("kwargs", "place"),
    [
        ({"trace_id": "xyz"}, "trace_id"),
        ({"trace_id": "0" * 32}, "trace_id"),
        ({"span_id": "ABCDEF0123456789"}, "span_id"),
        ({"parent_span_id": "12"}, "parent_span_id"),
        ({"seq": -1}, "seq"),
    ],
)
def test_bad_envelope_names_the_field(kwargs: dict[str, object], place: str) -> None:
    args: dict[str, object] = {
        "trace_id": TID,
        "span_id": SPAN,
        "seq": 0,
        "payload": Response(text="x"),
    }
    args.update(kwargs)
    with pytest.raises(PayloadError) as info:
        Event.create(**args)  # type: ignore[arg-type]
    assert info.value.path == place


@pytest.mark.parametrize(
    ("kind", "payload", "place", "words"),
    [
        ("plan", {"steps": [{"tool": "a"}, {"tool": 3}]}, "payload.steps[1].tool", "string"),
        ("plan", {"steps": [{}]}, "payload.steps[0]", "needs a tool or a text"),
        ("plan", {}, "payload", "missing required field 'steps'"),
        ("response", {"text": "a", "txt": "b"}, "payload", "unknown field(s) txt"),
        ("tool.returned", {"call_id": "c", "duration_ms": "fast"}, "payload.duration_ms", "number"),
        ("run.finished", {"status": "done"}, "payload.status", "not one of"),
        (
            "verdict",
            {
                "scorer": "s",
                "scorer_version": "1",
                "input_hash": "h",
                "subject_trace_id": TID,
                "failure_type": "missing call",
            },
            "payload",
            "namespaced",
        ),
        ("sql.executed", {"query": "q", "rows": [[float("nan")]]}, "payload.rows[0][0]", "finite"),
        ("nope", {}, "kind", "unknown event kind"),
    ],
)
def test_bad_payload_names_the_place(
    kind: str, payload: dict[str, object], place: str, words: str
) -> None:
    with pytest.raises(PayloadError) as info:
        validate_payload(kind, payload)
    assert info.value.path == place
    assert words in str(info.value)


@pytest.mark.parametrize("seed", range(5))
def test_the_compiled_validator_equals_the_reflective_one(seed: int) -> None:
    """validate_payload (compiled) gives exactly to_json(from_json(...)), errors included."""
    rng = random.Random(seed)
    for event in run_events(rng, fail=seed % 2 == 0):
        cls = PAYLOAD_TYPES[event.kind]
        sparse = {k: v for k, v in event.payload.items() if v not in (None, [], {})}
        assert validate_payload(event.kind, sparse) == to_json(from_json(cls, sparse))
        for key in event.payload:
            broken = {**event.payload, key: object()}
            with pytest.raises(PayloadError) as compiled:
                validate_payload(event.kind, broken)
            with pytest.raises(PayloadError) as reflective:
                from_json(cls, broken)
            assert str(compiled.value) == str(reflective.value)


def test_every_kind_has_a_documented_schema() -> None:
    required_kinds = {
        "run.started",
        "plan",
        "tool.called",
        "tool.returned",
        "sql.executed",
        "retrieval",
        "llm.called",
        "message",
        "response",
        "run.finished",
        "verdict",
    }
    assert required_kinds <= set(PAYLOAD_TYPES)
    for kind, cls in PAYLOAD_TYPES.items():
        schema = json_schema(cls)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema["description"], kind
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{kind}.{name} has no description"
    verdict = json_schema(Verdict)
    assert {"scorer", "scorer_version", "input_hash", "subject_trace_id"} <= set(
        verdict["required"]
    )


@pytest.fixture
def plan_v0() -> Iterator[None]:
    """Pretend plan payloads once were version 0: {"tools": [...]}."""

    @register_upcaster("plan", 0)
    def _(payload: dict[str, object]) -> dict[str, object]:
        tools = payload.pop("tools")
        assert isinstance(tools, list)
        return {"steps": [{"tool": t} for t in tools]}

    yield
    unregister_upcaster("plan", 0)


def _plan_v0(payload: dict[str, object]) -> Event:
    """A stored plan event written at schema version 0."""
    return Event(
        event_id=event_id_for(TID, SPAN, "plan", 0),
        trace_id=TID,
        span_id=SPAN,
        parent_span_id=None,
        seq=1,
        ts=datetime.fromisoformat("2026-01-01T00:00:00+00:00"),
        kind="plan",
        payload=payload,
        schema_version=0,
    )


def test_old_payload_versions_are_upcast_on_read(plan_v0: None) -> None:
    old = _plan_v0({"tools": ["sql", "answer"]})
    assert old.data == Plan(steps=[PlanStep(tool="sql"), PlanStep(tool="answer")])
    assert old.payload == {"tools": ["sql", "answer"]}  # the stored event is untouched
    assert old.upcast().schema_version == Plan.VERSION


def test_unknown_old_version_is_a_clear_error() -> None:
    old = _plan_v0({})
    with pytest.raises(PayloadError, match="no upcaster for plan from version 0"):
        _ = old.data


def test_trace_helpers_read_a_run() -> None:
    events = run_events(random.Random(3), fail=True)
    shuffled = list(reversed(events))
    trace = Trace.from_events(shuffled)
    assert [e.seq for e in trace.events] == sorted(e.seq for e in events)
    assert trace.status == "error"
    assert [s.tool for s in trace.plan()] == ["sql", "search"]
    calls = trace.tool_calls()
    assert [(c.tool, c.returned, c.error) for c in calls] == [
        ("sql", True, None),
        ("search", True, "timeout"),
    ]
    assert trace.response is not None and trace.response.startswith("answer")
    assert trace.started is not None and trace.started.agent == "agent-a"
    with pytest.raises(ValueError, match="several traces"):
        Trace.from_events(events + run_events(random.Random(4)))


def test_a_trace_orders_its_events_by_seq_then_time_then_id() -> None:
    """Trace.from_events and Trace.partial skip sorting events given in strictly increasing
    seq: whatever the order given, ties of seq included, the result is the sorted one."""
    from agentdocket.events.trace import event_order

    rng = random.Random(7)
    t0 = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    for _ in range(200):
        events = [
            Event.create(
                trace_id=TID,
                span_id=f"{i + 1:016x}",
                seq=rng.randrange(4),
                ts=t0.replace(microsecond=rng.randrange(3)),
                payload=Response(text=str(i)),
            )
            for i in range(rng.randrange(1, 6))
        ]
        rng.shuffle(events)
        if rng.random() < 0.5:
            events.sort(key=lambda e: e.seq)
        expected = tuple(sorted(events, key=event_order))
        assert Trace.partial(TID, events).events == expected
        assert Trace.from_events(events).events == expected


def test_call_arguments_are_the_tool_calls_requests() -> None:
    """call_arguments gives what tool_calls says of each request, bare values resolved from
    the model's plan steps (by call id, else the first unclaimed step of the tool)."""
    from agentdocket.events import ToolCalled, ToolReturned

    def event(seq: int, payload: object) -> Event:
        return Event.create(trace_id=TID, span_id=f"{seq + 1:016x}", seq=seq, payload=payload)

    events = [
        event(
            0,
            Plan(
                steps=[
                    PlanStep(tool="search", arguments={"q": "by id"}, call_id="c1"),
                    PlanStep(tool="search", arguments={"q": "unclaimed"}),
                    PlanStep(tool="fetch", arguments={"url": "u"}, call_id="c9"),
                ]
            ),
        ),
        event(1, ToolCalled(call_id="c1", tool="search", arguments="by id")),
        event(2, ToolReturned(call_id="c1", tool="search", result=[1])),
        event(3, ToolCalled(call_id="c2", tool="search", arguments="unclaimed")),
        event(4, ToolCalled(call_id="c3", tool="search", arguments="left bare")),
        event(5, ToolCalled(call_id="c4", tool="fetch", arguments={"url": "v"})),
        event(6, ToolReturned(call_id="c4", tool="fetch", error="boom")),
    ]
    trace = Trace.from_events(events)
    calls = trace.tool_calls()
    assert [tuple(c) for c in trace.call_arguments()] == [
        (c.call_id, c.tool, c.arguments) for c in calls
    ]
    assert [c.arguments for c in calls] == [
        {"q": "by id"},
        {"q": "unclaimed"},
        "left bare",
        {"url": "v"},
    ]
    assert [(c.returned, c.result, c.error) for c in calls] == [
        (True, [1], None),
        (False, None, None),
        (False, None, None),
        (True, None, "boom"),
    ]
