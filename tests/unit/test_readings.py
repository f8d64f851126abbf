"""A run's question and answer read from its model calls when it recorded none, and what the
scorers that read them hash."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentdocket import scorers
from agentdocket.events import Event, Trace

TID = "ab" * 16


def _llm(seq: int, inputs: list[Any], outputs: list[Any]) -> Event:
    payload = {
        "model": "m",
        "input_messages": inputs,
        "output_messages": outputs,
        "attributes": {},
    }
    return Event.create(
        trace_id=TID, span_id=f"{seq + 1:016x}", seq=seq, kind="llm.called", payload=payload
    )


def _events(with_answer: bool) -> list[Event]:
    user = {"role": "user", "content": "Weather in Paris?"}
    call = {"role": "assistant", "content": "", "tool_calls": [{"name": "w", "arguments": {}}]}
    final = {"role": "assistant", "content": "18 C in Paris."}
    out = [
        Event.create(
            trace_id=TID, span_id="a" * 16, seq=0, kind="run.started", payload={"agent": "weather"}
        ),
        _llm(1, [{"role": "system", "content": "Be brief."}, user], [call]),
        _llm(2, [user, call, {"role": "tool", "content": "18 C"}], [final]),
    ]
    if with_answer:
        out.append(
            Event.create(
                trace_id=TID,
                span_id="a" * 16,
                seq=3,
                kind="response",
                payload={"text": "It is 18 C."},
            )
        )
    return out


def test_question_and_answer_fall_back_to_the_model_calls() -> None:
    trace = Trace.from_events(_events(with_answer=False))
    assert trace.question == "Weather in Paris?"
    assert trace.response == "18 C in Paris."
    recorded = Trace.from_events(_events(with_answer=True))
    assert recorded.response == "It is 18 C."  # a recorded answer wins
    # a last call that only asks for tools gives no answer
    cut = Trace.from_events(_events(with_answer=False)[:2])
    assert cut.response is None


def test_model_calls_count_in_the_hash_only_where_they_are_read() -> None:
    similarity = scorers.get("response.similarity")
    old_style = dataclasses.replace(similarity, inputs=("response", "case"))
    recorded = Trace.from_events(_events(with_answer=True))
    assert similarity.input_hash(recorded) == old_style.input_hash(recorded)
    derived = Trace.from_events(_events(with_answer=False))
    assert similarity.input_hash(derived) != old_style.input_hash(derived)
    assert "llm.called" in similarity.event_kinds  # the runner reads them
