"""Sessions: the runs that share a conversation id, on every backend. Turns recorded through
the tracer (``tracer.run(..., conversation=...)``), read back grouped, in order, through the
store and the command line, the same after a rebuild, and a late turn joins its session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentdocket.store import open_store
from tests.helpers.db import cli
from tests.helpers.fresh import EVERY, fresh_url
from tests.helpers.recorder import Recorder


@pytest.fixture(params=EVERY)
def url(request: pytest.FixtureRequest) -> str:
    return fresh_url(request)


def _turn(recorder: Recorder, conversation: str | None, question: str, answer: str) -> None:
    with recorder.tracer.run("support", question=question, conversation=conversation) as run:
        run.respond(answer)


def _record(url: str, tmp_path: Path) -> None:
    recorder = Recorder(url, tmp_path / "spool")
    try:
        _turn(recorder, "c-book", "I need a room in Paris", "For which nights?")
        _turn(recorder, None, "a run of no conversation", "ok")
        _turn(recorder, "c-book", "The 3rd to the 5th", "Booked: 2 nights.")
        failing = recorder.tracer.run("support", question="Cancel it", conversation="c-cancel")
        with pytest.raises(RuntimeError), failing:
            raise RuntimeError("the booking service is away")
        _turn(recorder, "c-book", "Thanks", "You are welcome.")
        recorder.flush()
    finally:
        recorder.close()


def test_turns_sharing_a_conversation_are_one_session_in_order(url: str, tmp_path: Path) -> None:
    _record(url, tmp_path)
    with open_store(url) as store:
        sessions = {s["session_id"]: s for s in store.sessions.recent()}
        assert store.sessions.count() == 2
        book, cancel = sessions["c-book"], sessions["c-cancel"]
        assert (book["turns"], book["status"], book["agent"]) == (3, "ok", "support")
        assert book["first_question"] == "I need a room in Paris"
        assert book["last_answer"] == "You are welcome."
        assert (cancel["turns"], cancel["errors"], cancel["status"]) == (1, 1, "error")
        turns = store.sessions.turns("c-book")
        assert [t["question"] for t in turns] == [
            "I need a room in Paris",
            "The 3rd to the 5th",
            "Thanks",
        ]
        assert store.sessions.turns("no-such") == []
        before = store.sessions.recent()
        store.projections.rebuild()
        assert store.sessions.recent() == before

    listed = json.loads(cli(url, "sessions", "list", "--format", "json"))
    assert listed["total"] == 2
    assert {(s["session_id"], s["turns"]) for s in listed["sessions"]} == {
        ("c-book", 3),
        ("c-cancel", 1),
    }
    shown = json.loads(cli(url, "sessions", "show", "c-bo", "--format", "json"))
    assert shown["session_id"] == "c-book"
    assert [(t["question"], t["answer"]) for t in shown["turns"]] == [
        ("I need a room in Paris", "For which nights?"),
        ("The 3rd to the 5th", "Booked: 2 nights."),
        ("Thanks", "You are welcome."),
    ]
    assert "turn 3" in cli(url, "sessions", "show", "c-book")


def test_a_late_turn_joins_its_session(url: str, tmp_path: Path) -> None:
    _record(url, tmp_path)
    recorder = Recorder(url, tmp_path / "spool-late")
    try:
        _turn(recorder, "c-cancel", "Try again, please", "Cancelled.")
        recorder.flush()
    finally:
        recorder.close()
    with open_store(url) as store:
        [cancel] = [s for s in store.sessions.recent() if s["session_id"] == "c-cancel"]
        assert (cancel["turns"], cancel["status"], cancel["last_answer"]) == (
            2,
            "error",  # a turn failed, even if a later one answered
            "Cancelled.",
        )
        assert store.sessions.recent(limit=1)[0]["session_id"] == "c-cancel"  # active last
