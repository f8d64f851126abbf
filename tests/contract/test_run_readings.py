"""A run's question and answer in the runs projection: the same whatever batches a run's events
came in and in whatever order, the same after a rebuild and after migration 0011 filled them,
and the same as the trace the scorers read."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from agentdocket.events import Event
from agentdocket.store import open_store
from agentdocket.store.migrate import downgrade, upgrade
from tests.helpers.factory import T0


def _event(tid: str, n: int, kind: str, payload: dict[str, Any], seq: int = 0) -> Event:
    return Event.create(
        trace_id=tid,
        span_id=f"{n + 1:016x}",
        seq=seq,
        ts=T0 + timedelta(seconds=n),
        kind=kind,
        payload=payload,
    )


def _llm(tid: str, n: int, user: str | None, reply: str | None, calls: bool = False) -> Event:
    inputs = [{"role": "system", "content": "Be brief."}]
    if user is not None:
        inputs.append({"role": "user", "content": user})
    output: dict[str, Any] = {"role": "assistant", "content": reply or ""}
    if calls:
        output["tool_calls"] = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    payload = {"model": "m", "input_messages": inputs, "output_messages": [output]}
    return _event(tid, n, "llm.called", {**payload, "attributes": {}})


def _runs(rng: random.Random) -> list[list[Event]]:
    """Runs whose question and answer come from each place the precedence names."""
    out = []
    for i in range(6):
        tid = f"{rng.getrandbits(128):032x}"
        started = {"agent": "a", "question": "Own question?" if i % 2 == 0 else None}
        events = [_event(tid, 0, "run.started", {k: v for k, v in started.items() if v})]
        events.append(_llm(tid, 1, None, None, calls=True))  # no user message: skipped
        events.append(_llm(tid, 2, f"First user {i}?", None, calls=True))
        events.append(_llm(tid, 3, f"Later user {i}?", f"Final {i}."))
        if i % 3 == 1:  # the last model call only asks for tools: no answer from the calls
            events.append(_llm(tid, 4, "Again?", None, calls=True))
        if i % 3 == 2:  # a response event outranks any model call, the last one wins
            events.append(_event(tid, 5, "response", {"text": f"Said {i}."}, seq=1))
            events.append(_event(tid, 6, "response", {"text": f"Said last {i}."}, seq=1))
        events.append(_event(tid, 7, "run.finished", {"status": "ok"}, seq=2))
        out.append(events)
    return out


def _readings(url: str) -> dict[str, tuple[Any, ...]]:
    with open_store(url) as store:
        return {
            r["trace_id"]: (r["question"], r["answer"], r["question_key"], r["answer_key"])
            for r in store.reader.rows("runs", "trace_id")
        }


def test_question_and_answer_do_not_depend_on_batches_and_match_the_trace(url: str) -> None:
    rng = random.Random(27)
    runs = _runs(rng)
    batches = []
    for events in runs:  # each run in three batches, sent in a random order
        shuffled = rng.sample(events, len(events))
        batches += [shuffled[0:2], shuffled[2:4], shuffled[4:]]
    rng.shuffle(batches)
    with open_store(url) as store:
        for batch in batches:
            store.append(batch)
    stored = _readings(url)
    expected = {
        0: ("Own question?", "Final 0."),
        1: ("First user 1?", None),
        2: ("Own question?", "Said last 2."),
        3: ("First user 3?", "Final 3."),
        4: ("Own question?", None),
        5: ("First user 5?", "Said last 5."),
    }
    with open_store(url) as store:
        for i, events in enumerate(runs):
            tid = events[0].trace_id
            assert stored[tid][:2] == expected[i], i
            trace = store.reader.read_trace(tid)
            assert trace is not None
            assert (trace.question, trace.response) == expected[i], i
        store.projections.rebuild()
    assert _readings(url) == stored
    downgrade(url, "0010")
    upgrade(url)
    assert _readings(url) == stored
